import type { Connection } from 'mongoose';
import { DueStore } from './due-store';
import { PartitionStore } from './partition-store';

export const RIGHT_EXPIRIES = 'right_expiries';
export const SUBSCRIPTION_SCHEDULES = 'subscription_schedules';
export const HOLD_EXPIRIES = 'hold_expiries';

/** The scheduler's own database (docs/architecture.md). */
export function createStores(db: Connection) {
  return {
    rightExpiries: new DueStore(db, RIGHT_EXPIRIES),
    subscriptionSchedules: new DueStore(db, SUBSCRIPTION_SCHEDULES),
    /** When the holds of consumptions across rights and of reservations lapse (docs/decisions/0045). */
    holdExpiries: new DueStore(db, HOLD_EXPIRIES),
    partitions: new PartitionStore(db),
    /** The database itself, for what is not a store of its own (the replicas' memberships). */
    db: db.db!,
  };
}
