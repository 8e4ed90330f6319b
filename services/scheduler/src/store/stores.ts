import type { Connection } from 'mongoose';
import { DueStore } from './due-store';
import { PartitionStore } from './partition-store';

export const RIGHT_EXPIRIES = 'right_expiries';
export const SUBSCRIPTION_SCHEDULES = 'subscription_schedules';

/** The scheduler's own database (docs/architecture.md). */
export function createStores(db: Connection) {
  return {
    rightExpiries: new DueStore(db, RIGHT_EXPIRIES),
    subscriptionSchedules: new DueStore(db, SUBSCRIPTION_SCHEDULES),
    partitions: new PartitionStore(db),
    /** The database itself, for what is not a store of its own (the replicas' memberships). */
    db: db.db!,
  };
}
