import { SchedulePage } from '@rs/contracts';
import { INTERNAL_TOKEN_HEADER, type InternalTokenSigner, type Principal } from '@rs/http';
import type { Logger } from '@rs/logging';
import { subscriptionDueAt, type DueFor } from './schedules';
import type { DueStore } from './store/due-store';

const SCHEDULER: Principal = {
  clientId: 'service:scheduler',
  grantorId: null,
  admin: false,
  scheme: 'service',
  scopes: [],
  subject: null,
};

/**
 * Rebuilds the subscription schedule from the subscriptions service (DESIGN.md issue:
 * "rebuilt from the subscriptions service when it starts or finds itself out of date"):
 * every subscription's schedule is recorded with its sequence, so an entry newer from
 * events is never overwritten by an older page. Returns how many were read.
 */
export async function rebuildSubscriptionSchedules(
  subscriptionsUrl: string,
  signer: InternalTokenSigner,
  store: DueStore<DueFor>,
): Promise<number> {
  let cursor: string | null = null;
  let read = 0;
  do {
    const url = new URL('/internal/schedules', subscriptionsUrl);
    url.searchParams.set('limit', '500');
    if (cursor) url.searchParams.set('cursor', cursor);
    const response = await fetch(url, {
      headers: { [INTERNAL_TOKEN_HEADER]: await signer.tokenFor(SCHEDULER) },
      signal: AbortSignal.timeout(10_000),
    });
    if (response.status !== 200) throw new Error(`subscriptions answered ${response.status}`);
    const page = SchedulePage.parse(await response.json());
    for (const entry of page.items) {
      if (entry.state === 'EXPIRED') continue;
      await store.record({
        id: entry.subscriptionId,
        sequence: entry.sequence,
        dueAt: subscriptionDueAt(entry),
        data: { connectId: entry.connectId },
      });
    }
    read += page.items.length;
    cursor = page.next;
  } while (cursor);
  return read;
}

/** Rebuilds at start and then every `everyMs`, retrying soon while the subscriptions service is unreachable. */
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
        logger.info({ subscriptions: read }, 'subscription schedule rebuilt');
        if (!stopped) timer = setTimeout(run, everyMs);
      },
      (error: unknown) => {
        logger.warn({ err: error }, 'cannot rebuild the subscription schedule yet');
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
