import { ExpiryPage, SchedulePage } from '@rs/contracts';
import { INTERNAL_TOKEN_HEADER, type InternalTokenSigner, type Principal } from '@rs/http';
import type { Logger } from '@rs/logging';
import type { z } from 'zod';
import { rightDueAt, subscriptionDueAt, type DueFor } from './schedules';
import type { DueStore } from './store/due-store';

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
  each: (item: T) => Promise<void>,
): Promise<number> {
  let cursor: string | null = null;
  let read = 0;
  do {
    const target = new URL(url);
    target.searchParams.set('limit', '500');
    if (cursor) target.searchParams.set('cursor', cursor);
    const response = await fetch(target, {
      headers: { [INTERNAL_TOKEN_HEADER]: await signer.tokenFor(SCHEDULER) },
      signal: AbortSignal.timeout(10_000),
    });
    if (response.status !== 200) throw new Error(`${target.origin} answered ${response.status}`);
    const page = schema.parse(await response.json());
    for (const item of page.items) await each(item);
    read += page.items.length;
    cursor = page.next;
  } while (cursor);
  return read;
}

/**
 * Rebuilds the scheduler's projections from the services that own the data (docs/decisions/0009):
 * every entry is recorded with its sequence, so one that events made newer is never
 * overwritten by an older page. Returns how many entries were read.
 */
export async function rebuildSchedules(
  urls: { subscriptions: string; rights: string },
  signer: InternalTokenSigner,
  stores: { rightExpiries: DueStore<DueFor>; subscriptionSchedules: DueStore<DueFor> },
): Promise<number> {
  const subscriptions = await pageThrough(
    new URL('/internal/schedules', urls.subscriptions).toString(),
    signer,
    SchedulePage,
    async (entry) => {
      if (entry.state === 'EXPIRED') return;
      await stores.subscriptionSchedules.record({
        id: entry.subscriptionId,
        sequence: entry.sequence,
        dueAt: subscriptionDueAt(entry),
        data: { connectId: entry.connectId },
      });
    },
  );
  const rights = await pageThrough(
    new URL('/internal/expiries', urls.rights).toString(),
    signer,
    ExpiryPage,
    async (entry) => {
      await stores.rightExpiries.record({
        id: entry.rightId,
        sequence: entry.sequence,
        dueAt: rightDueAt(entry),
        data: { connectId: entry.connectId },
      });
    },
  );
  return subscriptions + rights;
}

/** Rebuilds at start and then every `everyMs`, retrying soon while a service is unreachable. */
export function keepSchedulesRebuilt(
  rebuild: () => Promise<number>,
  everyMs: number,
  logger: Logger,
): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const run = () => {
    rebuild().then(
      (read) => {
        logger.info({ entries: read }, 'schedules rebuilt');
        if (!stopped) timer = setTimeout(run, everyMs);
      },
      (error: unknown) => {
        logger.warn({ err: error }, 'cannot rebuild the schedules yet');
        if (!stopped) timer = setTimeout(run, Math.min(everyMs, 5_000));
      },
    );
  };
  run();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
