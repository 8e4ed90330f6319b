import { systemClock, type Clock } from '@rs/time';
import { ExpiryPage, HoldPage, SchedulePage } from '@rs/contracts';
import { readBucket, servicePrincipal, type InternalTokenSigner } from '@rs/http';
import type { z } from 'zod';
import type { ClockWork } from '../domain/clock';
import { bucketsOf, rightDueAt, rightEnd, subscriptionDueAt } from '../domain/due';
import { ClockRecordings } from './clock-view';
import type { ClockDueItem, DueStore } from '../store/due-store';

const SCHEDULER = servicePrincipal('scheduler');

/** The test clock a listed entry lives on, if any (docs/decisions/0048). */
const clockOf = (entry: object): string | null =>
  'clockId' in entry && typeof entry.clockId === 'string' ? entry.clockId : null;

/** Entries per page of a rebuild: what a replica holds at once, whatever the data's size. */
const PAGE = 500;

/**
 * Rebuilds the scheduler's projections of the partitions this replica owns from the services
 * that own the data (docs/decisions/0009; docs/operations.md): the buckets of those partitions
 * (`bucketsOf`), a page at a time, so that each replica reads its share and holds a page.
 * Every entry is recorded as the version of its sequence, so a version recorded before (by its
 * event) is left alone, and one lost (an event purged, a late write) is recorded again.
 * Returns how many entries were read.
 */
export async function rebuildSchedules(options: {
  urls: { subscriptions: string; rights: string };
  signer: InternalTokenSigner;
  stores: { rightExpiries: DueStore; subscriptionSchedules: DueStore; holdExpiries: DueStore };
  partitions: readonly number[];
  clock?: Clock;
  /** Told what is recorded on test clocks, for this replica's clock driver. */
  recordings?: ClockRecordings;
  /**
   * Which of these test clocks are live: what the services still list of a deleted clock (its
   * removal under way) is not kept (docs/decisions/0048 keeps nothing of a deleted clock).
   */
  liveClocks?: (clockIds: readonly string[]) => Promise<ReadonlyMap<string, unknown>>;
}): Promise<number> {
  const { urls, signer, stores, partitions, clock = systemClock, recordings = new ClockRecordings() } = options;
  const liveClocks = options.liveClocks ?? (async (ids: readonly string[]) => new Map(ids.map((id) => [id, true])));
  /**
   * Every entry of the owned buckets of one listing recorded in one store: its version, as a
   * due item where something is due (nothing else is kept on real time), and every version of
   * what lives on a test clock, under its clock (docs/decisions/0048).
   */
  const rebuild = async <T extends object>(
    [service, path]: ['subscriptions' | 'rights', string],
    schema: z.ZodType<{ items: T[]; next: string | null }>,
    store: DueStore,
    versionOf: (entry: T) => Omit<ClockDueItem, 'clockId'>,
    kind: ClockWork['kind'],
  ) => {
    const url = new URL(path, urls[service]).toString();
    let read = 0;
    for (const bucket of bucketsOf(partitions))
      read += await readBucket(
        url,
        bucket,
        { signer, caller: SCHEDULER, service, pageSize: PAGE, schema },
        async (entries) => {
          const versions = entries.map((entry) => ({ ...versionOf(entry), clockId: clockOf(entry) }));
          const clocks = [...new Set(versions.flatMap(({ clockId }) => (clockId ? [clockId] : [])))];
          const live = clocks.length === 0 ? new Map() : await liveClocks(clocks);
          recordings.recorded(
            kind,
            await store.recordOnClocks(
              versions.flatMap(({ clockId, ...version }) =>
                clockId && live.has(clockId) ? [{ ...version, clockId }] : [],
              ),
              clock,
            ),
          );
          await store.recordMany(
            versions.flatMap(({ clockId, dueAt, instant: _instant, ...version }) =>
              !clockId && dueAt ? [{ ...version, dueAt }] : [],
            ),
            clock,
          );
        },
      );
    return read;
  };
  const version = (
    id: string,
    { sequence, connectId }: { sequence: number; connectId: string },
    dueAt: Date | null,
    /** On a clock, the instant it is kept under when not its due time (ClockDueItem). */
    instant?: Date | null,
  ) => ({
    id,
    sequence,
    connectId,
    dueAt,
    ...(instant === undefined ? {} : { instant }),
  });
  const subscriptions = await rebuild(
    ['subscriptions', '/internal/schedules'],
    SchedulePage,
    stores.subscriptionSchedules,
    (e) => version(e.subscriptionId, e, subscriptionDueAt(e)),
    'renewal',
  );
  const rights = await rebuild(
    ['rights', '/internal/expiries'],
    ExpiryPage,
    stores.rightExpiries,
    (e) => version(e.rightId, e, rightDueAt(e), rightEnd(e)),
    'expiry',
  );
  // The lapses of reservations and consumptions across rights still holding units (docs/decisions/0045).
  const holds = await rebuild(
    ['rights', '/internal/holds'],
    HoldPage,
    stores.holdExpiries,
    (e) => version(e.consumptionId, e, new Date(e.until)),
    'hold',
  );
  return subscriptions + rights + holds;
}
