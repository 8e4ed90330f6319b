import { SubscriptionEventTypes } from '@rs/contracts';
import { HistoryLog } from '@rs/store';
import type { mongo } from 'mongoose';

export const SUBSCRIPTION_HISTORY = 'subscription_history';

/** The changes of subscriptions (docs/api.md "History"): every subscription event. */
export const subscriptionHistory = (db: mongo.Db, retentionDays?: number): HistoryLog =>
  new HistoryLog(
    db,
    SUBSCRIPTION_HISTORY,
    new Set(Object.values(SubscriptionEventTypes)),
    { kind: 'system', id: 'subscriptions' },
    retentionDays,
  );
