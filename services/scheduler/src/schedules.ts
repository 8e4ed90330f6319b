import {
  CommandTypes,
  createCloudEvent,
  type RightEventData,
  type RightsExpireData,
  type SubscriptionEventData,
  type SubscriptionsRenewData,
} from '@rs/contracts';
import { parseTimeSpec, periodExists, periodStart, subscriptionEnd } from '@rs/time';
import type { Connection } from 'mongoose';
import { DueStore, type DueItem } from './store/due-store';

/** Who a due item is for: every command names the user. */
export interface DueFor {
  connectId: string;
}

export const RIGHT_EXPIRIES = 'right_expiries';
export const SUBSCRIPTION_SCHEDULES = 'subscription_schedules';

export function createDueStores(db: Connection) {
  return {
    rightExpiries: new DueStore<DueFor>(db, RIGHT_EXPIRIES),
    subscriptionSchedules: new DueStore<DueFor>(db, SUBSCRIPTION_SCHEDULES),
  };
}

/** A right is due to expire at the end of its interval while ACTIVE or SUSPENDED (DESIGN.md 3). */
export function rightDueAt(right: Pick<RightEventData, 'state' | 'timeInterval'>): Date | null {
  if (right.state !== 'ACTIVE' && right.state !== 'SUSPENDED') return null;
  return new Date(right.timeInterval.split('/')[1]!);
}

/**
 * A subscription is due at the start of its next period to issue, or at its end, whichever
 * comes first (DESIGN.md 3 "Renewal"). Pure.
 */
export function subscriptionDueAt(
  subscription: Pick<SubscriptionEventData, 'state' | 'timeSpec' | 'nextPeriod'>,
): Date | null {
  if (subscription.state === 'EXPIRED') return null;
  const parsed = parseTimeSpec(subscription.timeSpec);
  if (!parsed.ok) return null;
  const spec = parsed.value;
  const candidates: number[] = [];
  if (subscription.nextPeriod !== null && periodExists(spec, subscription.nextPeriod)) {
    candidates.push(periodStart(spec, subscription.nextPeriod).toMillis());
  }
  const end = subscriptionEnd(spec);
  if (end) candidates.push(end.toMillis());
  return candidates.length > 0 ? new Date(Math.min(...candidates)) : null;
}

export const expireCommand = (item: DueItem<DueFor>, now: Date) =>
  createCloudEvent<RightsExpireData>({
    source: '/scheduler',
    type: CommandTypes.rightsExpire,
    subject: item.id,
    data: { rightId: item.id, connectId: item.data.connectId },
    time: now,
  });

export const renewCommand = (item: DueItem<DueFor>, now: Date) =>
  createCloudEvent<SubscriptionsRenewData>({
    source: '/scheduler',
    type: CommandTypes.subscriptionsRenew,
    subject: item.id,
    data: { subscriptionId: item.id, connectId: item.data.connectId },
    time: now,
  });
