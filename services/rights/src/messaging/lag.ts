import { histogram } from '@rs/telemetry/metrics';

/** Seconds: from on time to an hour late, the range the alerts of docs/operations.md read. */
const LAG_BUCKETS = [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/**
 * Renewal lag: from a period falling due (its start, or the subscription's
 * creation if later) to its rights stored and their `right.created` published. One
 * observation per period; a redelivered command is observed again.
 */
const renewalLag = histogram(
  'renewal_lag_seconds',
  'From a period falling due to its rights stored and published, per period issued',
  [],
  LAG_BUCKETS,
);

/** Expiry lag: from a right's end to its `right.expired` published. */
const expiryLag = histogram(
  'expiry_lag_seconds',
  "From a right's end to its right.expired published, per right",
  [],
  LAG_BUCKETS,
);

const secondsBetween = (from: number, to: number) => Math.max(0, (to - from) / 1000);

export function observeRenewalLag(dueAt: string | undefined, publishedAt: Date): void {
  if (dueAt !== undefined) renewalLag.observe(secondsBetween(Date.parse(dueAt), publishedAt.getTime()));
}

export function observeExpiryLag(end: Date, publishedAt: Date): void {
  expiryLag.observe(secondsBetween(end.getTime(), publishedAt.getTime()));
}
