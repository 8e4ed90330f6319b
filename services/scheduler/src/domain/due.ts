import {
  RightEventTypes,
  snapshotOf,
  SubscriptionEventTypes,
  type SubscriptionSnapshot,
  type CloudEvent,
  type RightEventData,
  type SubscriptionEventData,
} from '@rs/contracts';
import { landedLate as landedLateFor, secondOf, type SweepTiming } from '@rs/due';
import { BUCKETS, hashOf } from '@rs/hashing';
import { parseTimeSpec, periodExists, periodStartOrNull, subscriptionEnd } from '@rs/time';

/**
 * Where due work is kept so that every query for it is an equality (docs/decisions/0011):
 * FerretDB serves only top-level equality from an index, MongoDB any. Each item lives under
 * a key `<partition>:<second>` of its due time, or `soon` when it is due (or nearly) as it
 * is recorded, so a sweeper that has passed a second never misses it. Pure.
 */

/** Partitions of the due work; scheduler replicas share them. Fixed: items are stored by it. */
export const PARTITIONS = 8;
/** An item due within this margin when recorded goes to the `soon` bucket. */
export const SOON_MARGIN_MS = 3_000;
/** A second is looked at again this long after it was swept, for writes that landed late. */
export const SECOND_LOOK_S = 30;

/** A stable, evenly spread partition for an entity id. */
export const partitionOf = (id: string): number => hashOf(id) % PARTITIONS;

/**
 * The buckets of the owning services' collections (`bucketOf`, of the same hash) whose ids
 * are all in these partitions: a bucket's partition is its number modulo PARTITIONS, since
 * PARTITIONS divides BUCKETS. What a replica's rebuild reads (docs/operations.md).
 */
export function bucketsOf(partitions: readonly number[]): number[] {
  return Array.from({ length: BUCKETS }, (_, bucket) => bucket).filter((bucket) =>
    partitions.includes(bucket % PARTITIONS),
  );
}

export { secondOf };
export const slotKey = (partition: number, second: number) => `${partition}:${second}`;
/** One `soon` bucket for all partitions: it stays small, and is read once a sweep. */
export const SOON_KEY = 'soon';

/**
 * The key the versions of what lives on a test clock are kept under (docs/decisions/0048), by
 * the second they were recorded in: its driver reads each second as it goes; no sweep reads it.
 */
export const clockKey = (clockId: string, recordedIn: number): string => `clock:${clockId}:${recordedIn}`;

/** The key an item due at `dueAt` is stored under when recorded at `now`. */
export function dueKeyOf(id: string, dueAt: Date, now: Date): string {
  const partition = partitionOf(id);
  return dueAt.getTime() - now.getTime() <= SOON_MARGIN_MS ? SOON_KEY : slotKey(partition, secondOf(dueAt));
}

/** How far apart the clocks of scheduler replicas may be (the sweeper's, the recorder's). */
export const CLOCK_SKEW_MS = 1_000;
/**
 * The scheduler's sweepers read a second this long before it begins (`SecondSweeper`'s
 * `early`): what falls due at its start, a month's renewals on the 1st, is in memory then and
 * commanded at once, not after a read of the whole burst (10,000 items: about half a second
 * here) or a second later.
 */
export const READ_AHEAD_S = 1;
const SWEEP_TIMING: SweepTiming = { lagS: -1 - READ_AHEAD_S, clockSkewMs: CLOCK_SKEW_MS };

/**
 * Whether a recording under `key` that finished at `landedAt` may have landed after a sweeper
 * read its second (the late-write rule of @rs/due; a sweeper deletes a second by key once it
 * has handed on what it read). Such items are recorded in the `soon` bucket too, so they are commanded at
 * the next sweep instead of lost or left for the second look.
 */
export function landedLate(key: string, landedAt: Date): boolean {
  if (key === SOON_KEY) return false;
  return landedLateFor(Number(key.slice(key.indexOf(':') + 1)), landedAt, SWEEP_TIMING);
}

/**
 * The partitions a scheduler replica sweeps: the live replicas in id order take turns, so
 * each partition has one owner; when one stops renewing its membership, the others' next
 * view gives them its share. Briefly two may sweep one partition: the commands are idempotent.
 */
export function ownedPartitions(liveMembers: readonly string[], me: string): number[] {
  const members = [...new Set(liveMembers)].sort();
  const index = members.indexOf(me);
  if (index < 0) return [];
  return Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => p % members.length === index);
}

/** A right is due to expire at the end of its interval, or of its grace, while ACTIVE or SUSPENDED (docs/api.md). */
export function rightDueAt(right: Pick<RightEventData, 'state' | 'timeInterval' | 'graceEnds'>): Date | null {
  if (right.state !== 'ACTIVE' && right.state !== 'SUSPENDED') return null;
  return rightEnd(right);
}

/** When a right's use ends: its grace's end, or its interval's; null when it has none. */
export function rightEnd(right: Pick<RightEventData, 'timeInterval' | 'graceEnds'>): Date | null {
  const end = new Date(right.graceEnds ?? right.timeInterval.split('/')[1] ?? '');
  return Number.isNaN(end.getTime()) ? null : end;
}

/**
 * A subscription is due at the start of its next period to issue, or at its end, whichever
 * comes first (docs/api.md "Renewal").
 */
export function subscriptionDueAt(
  subscription: Pick<SubscriptionEventData, 'state' | 'timeSpec' | 'nextPeriod'>,
): Date | null {
  if (subscription.state === 'EXPIRED') return null;
  const parsed = parseTimeSpec(subscription.timeSpec);
  if (!parsed.ok) return null;
  const spec = parsed.value;
  const candidates: number[] = [];
  const next = subscription.nextPeriod === null ? null : periodStartOrNull(spec, subscription.nextPeriod);
  if (next && periodExists(spec, subscription.nextPeriod!)) candidates.push(next.toMillis());
  const end = subscriptionEnd(spec);
  if (end) candidates.push(end.toMillis());
  return candidates.length > 0 ? new Date(Math.min(...candidates)) : null;
}

/** What an event leaves due: the version of its resource, and when (null: nothing; docs/architecture.md). */
export interface DueAfter {
  id: string;
  dueAt: Date | null;
  /** What renewing it needs, as of the event (docs/decisions/0026). */
  snapshot?: SubscriptionSnapshot;
  /** On a test clock, the instant its version is kept under when not its due time (ClockDueItem). */
  instant?: Date | null;
}

/** After a right event: its expiry, unless it was removed. */
export function dueAfterRightEvent(event: CloudEvent<RightEventData>): DueAfter {
  return {
    id: event.data.rightId,
    dueAt: event.type === RightEventTypes.removed ? null : rightDueAt(event.data),
    instant: rightEnd(event.data),
  };
}

/** After a subscription event: its next renewal or end, unless it was deleted. */
export function dueAfterSubscriptionEvent(event: CloudEvent<SubscriptionEventData>): DueAfter {
  const snapshot = snapshotOf(event.data);
  return {
    id: event.data.subscriptionId,
    dueAt: event.type === SubscriptionEventTypes.deleted ? null : subscriptionDueAt(event.data),
    ...(snapshot ? { snapshot } : {}),
  };
}
