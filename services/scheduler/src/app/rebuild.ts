import { ExpiryPage, SchedulePage } from '@rs/contracts';
import { getFromService, type InternalTokenSigner, type Principal } from '@rs/http';
import type { z } from 'zod';
import { rightDueAt, subscriptionDueAt } from '../domain/due';
import type { DueItem, DueStore } from '../store/due-store';

const SCHEDULER: Principal = {
  clientId: 'service:scheduler',
  grantorId: null,
  admin: false,
  scheme: 'service',
  scopes: [],
  subject: null,
};

/** Reads every page of an internal listing of another service, with a service token. */
async function pageThrough<T>(
  url: string,
  signer: InternalTokenSigner,
  schema: z.ZodType<{ items: T[]; next: string | null }>,
  eachPage: (items: T[]) => Promise<void>,
): Promise<number> {
  let cursor: string | null = null;
  let read = 0;
  do {
    const target = new URL(url);
    target.searchParams.set('limit', '500');
    if (cursor) target.searchParams.set('cursor', cursor);
    const response = await getFromService(target, await signer.tokenFor(SCHEDULER), 10_000);
    if (response.status !== 200) throw new Error(`${target.origin} answered ${response.status}`);
    const page = schema.parse(await response.json());
    await eachPage(page.items);
    read += page.items.length;
    cursor = page.next;
  } while (cursor);
  return read;
}

/**
 * Rebuilds the scheduler's projections from the services that own the data (docs/decisions/0009):
 * every entry is recorded as the version of its sequence, so a version recorded before (by
 * its event) is left alone, and one lost (an event purged, a late write) is recorded again.
 * Returns how many entries were read.
 */
export async function rebuildSchedules(
  urls: { subscriptions: string; rights: string },
  signer: InternalTokenSigner,
  stores: { rightExpiries: DueStore; subscriptionSchedules: DueStore },
  clock: () => Date = () => new Date(),
): Promise<number> {
  const due = (id: string, sequence: number, connectId: string, dueAt: Date | null): DueItem[] =>
    dueAt ? [{ id, sequence, connectId, dueAt }] : [];
  const subscriptions = await pageThrough(
    new URL('/internal/schedules', urls.subscriptions).toString(),
    signer,
    SchedulePage,
    (entries) =>
      stores.subscriptionSchedules.recordMany(
        entries.flatMap((e) => due(e.subscriptionId, e.sequence, e.connectId, subscriptionDueAt(e))),
        clock(),
      ),
  );
  const rights = await pageThrough(
    new URL('/internal/expiries', urls.rights).toString(),
    signer,
    ExpiryPage,
    (entries) =>
      stores.rightExpiries.recordMany(
        entries.flatMap((e) => due(e.rightId, e.sequence, e.connectId, rightDueAt(e))),
        clock(),
      ),
  );
  return subscriptions + rights;
}
