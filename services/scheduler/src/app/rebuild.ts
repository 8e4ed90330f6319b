import { systemClock, type Clock } from '@rs/time';
import { ExpiryPage, HoldPage, SchedulePage } from '@rs/contracts';
import { readBucket, servicePrincipal, type InternalTokenSigner } from '@rs/http';
import type { z } from 'zod';
import { bucketsOf, rightDueAt, subscriptionDueAt } from '../domain/due';
import type { ClockDueItem, DueItem, DueStore } from '../store/due-store';

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
}): Promise<number> {
  const { urls, signer, stores, partitions, clock = systemClock } = options;
  /** Every entry of the owned buckets of one listing recorded in one store, as due items (those with a due time). */
  const rebuild = async <T extends object>(
    service: 'subscriptions' | 'rights',
    url: string,
    schema: z.ZodType<{ items: T[]; next: string | null }>,
    store: DueStore,
    dueOf: (entry: T) => DueItem | null,
    versionOf: (entry: T) => Omit<ClockDueItem, 'clockId'> = () => {
      throw new Error('nothing of this listing lives on a clock');
    },
  ) => {
    let read = 0;
    for (const bucket of bucketsOf(partitions))
      read += await readBucket(
        url,
        bucket,
        { signer, caller: SCHEDULER, service, pageSize: PAGE, schema },
        async (entries) => {
          // What lives on a test clock is kept by its clock (docs/decisions/0048).
          await store.recordOnClocks(
            entries.flatMap((entry) => {
              const clockId = clockOf(entry);
              return clockId ? [{ ...versionOf(entry), clockId }] : [];
            }),
            clock,
          );
          await store.recordMany(
            entries
              .filter((entry) => !clockOf(entry))
              .map(dueOf)
              .filter((item) => item !== null),
            clock,
          );
        },
      );
    return read;
  };
  const item = (id: string, sequence: number, connectId: string, dueAt: Date | null): DueItem | null =>
    dueAt ? { id, sequence, connectId, dueAt } : null;
  const subscriptions = await rebuild(
    'subscriptions',
    new URL('/internal/schedules', urls.subscriptions).toString(),
    SchedulePage,
    stores.subscriptionSchedules,
    (e) => item(e.subscriptionId, e.sequence, e.connectId, subscriptionDueAt(e)),
    (e) => ({ id: e.subscriptionId, sequence: e.sequence, connectId: e.connectId, dueAt: subscriptionDueAt(e) }),
  );
  const rights = await rebuild(
    'rights',
    new URL('/internal/expiries', urls.rights).toString(),
    ExpiryPage,
    stores.rightExpiries,
    (e) => item(e.rightId, e.sequence, e.connectId, rightDueAt(e)),
    (e) => ({ id: e.rightId, sequence: e.sequence, connectId: e.connectId, dueAt: rightDueAt(e) }),
  );
  // The lapses of reservations and consumptions across rights still holding units (docs/decisions/0045).
  const holds = await rebuild(
    'rights',
    new URL('/internal/holds', urls.rights).toString(),
    HoldPage,
    stores.holdExpiries,
    (e) => item(e.consumptionId, e.sequence, e.connectId, new Date(e.until)),
  );
  return subscriptions + rights + holds;
}
