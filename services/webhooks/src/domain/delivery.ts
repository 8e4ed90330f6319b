/**
 * A delivery's life (docs/api.md): pending until a 2xx, retried after each delay of the
 * schedule, then failed. Pure.
 */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** What an attempt came to: the endpoint's status, or null when it did not answer in time or at all. */
export interface AttemptOutcome {
  status: number | null;
}

export const isDelivered = (outcome: AttemptOutcome): boolean =>
  outcome.status !== null && outcome.status >= 200 && outcome.status < 300;

/**
 * After attempt number `attempts` (1 for the first): delivered, or the next attempt's time,
 * or failed once every delay of the schedule has been waited.
 */
export function afterAttempt(
  attempts: number,
  outcome: AttemptOutcome,
  now: Date,
  schedule: readonly number[],
): { status: DeliveryStatus; nextAttemptAt: Date | null } {
  if (isDelivered(outcome)) return { status: 'delivered', nextAttemptAt: null };
  const delay = schedule[attempts - 1];
  if (delay === undefined) return { status: 'failed', nextAttemptAt: null };
  return { status: 'pending', nextAttemptAt: new Date(now.getTime() + delay) };
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `5s,5m,30m,2h` → milliseconds; null when an item is not a positive number with a unit (ms, s, m, h, d). */
export function parseRetrySchedule(text: string): number[] | null {
  const delays = text.split(',').map((item) => {
    const match = /^\s*(\d+(?:\.\d+)?)(ms|s|m|h|d)\s*$/.exec(item);
    return match ? Number(match[1]) * UNITS[match[2]!]! : NaN;
  });
  return delays.every((delay) => Number.isFinite(delay) && delay > 0) ? delays : null;
}
