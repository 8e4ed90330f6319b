import { systemClock, type Clock } from '@rs/time';
import { ExpiryPage, SchedulePage } from '@rs/contracts';
import { getFromService, type InternalTokenSigner, type Principal } from '@rs/http';
import type { z } from 'zod';
import { bucketsOf, rightDueAt, subscriptionDueAt } from '../domain/due';
import type { DueItem, DueStore } from '../store/due-store';

const SCHEDULER: Principal = {
  clientId: 'service:scheduler',
  grantorId: null,
  admin: false,
  scheme: 'service',
  scopes: [],
  subject: null,
};

/** Entries per page of a rebuild: what a replica holds at once, whatever the data's size. */
const PAGE = 500;

/**
 * Reads every page of one bucket of an internal listing of another service, with a service
 * token (`<bucket>`, then `<bucket>.<last id>` until the bucket ends).
 */
async function pageThroughBucket<T>(
  url: string,
  bucket: number,
  signer: InternalTokenSigner,
  schema: z.ZodType<{ items: T[]; next: string | null }>,
  eachPage: (items: T[]) => Promise<void>,
): Promise<number> {
  let cursor: string | null = String(bucket);
  let read = 0;
  while (cursor !== null) {
    const target = new URL(url);
    target.searchParams.set('limit', String(PAGE));
    target.searchParams.set('cursor', cursor);
    const response = await getFromService(target, await signer.tokenFor(SCHEDULER), 10_000);
    if (response.status !== 200) throw new Error(`${target.origin} answered ${response.status}`);
    const page = schema.parse(await response.json());
    await eachPage(page.items);
    read += page.items.length;
    // A service of a release before DESIGN.md 10 answers a whole bucket and names the next one.
    cursor = page.next?.startsWith(`${bucket}.`) ? page.next : null;
  }
  return read;
}

/**
 * Rebuilds the scheduler's projections of the partitions this replica owns from the services
 * that own the data (docs/decisions/0009; DESIGN.md 10): the buckets of those partitions
 * (`bucketsOf`), a page at a time, so that each replica reads its share and holds a page.
 * Every entry is recorded as the version of its sequence, so a version recorded before (by its
 * event) is left alone, and one lost (an event purged, a late write) is recorded again.
 * Returns how many entries were read.
 */
export async function rebuildSchedules(
  urls: { subscriptions: string; rights: string },
  signer: InternalTokenSigner,
  stores: { rightExpiries: DueStore; subscriptionSchedules: DueStore },
  partitions: readonly number[],
  clock: Clock = systemClock,
): Promise<number> {
  /** Every entry of the owned buckets of one listing recorded in one store, as due items (those with a due time). */
  const rebuild = async <T>(
    url: string,
    schema: z.ZodType<{ items: T[]; next: string | null }>,
    store: DueStore,
    dueOf: (entry: T) => DueItem | null,
  ) => {
    let read = 0;
    for (const bucket of bucketsOf(partitions))
      read += await pageThroughBucket(url, bucket, signer, schema, async (entries) => {
        await store.recordMany(
          entries.map(dueOf).filter((item) => item !== null),
          clock,
        );
      });
    return read;
  };
  const item = (id: string, sequence: number, connectId: string, dueAt: Date | null): DueItem | null =>
    dueAt ? { id, sequence, connectId, dueAt } : null;
  const subscriptions = await rebuild(
    new URL('/internal/schedules', urls.subscriptions).toString(),
    SchedulePage,
    stores.subscriptionSchedules,
    (e) => item(e.subscriptionId, e.sequence, e.connectId, subscriptionDueAt(e)),
  );
  const rights = await rebuild(
    new URL('/internal/expiries', urls.rights).toString(),
    ExpiryPage,
    stores.rightExpiries,
    (e) => item(e.rightId, e.sequence, e.connectId, rightDueAt(e)),
  );
  return subscriptions + rights;
}
