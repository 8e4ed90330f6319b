// `node services/subscriptions/dist/migrate.js`: creates the indexes of this service's database.
import { historyEnvShape, serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { SubscriptionStore } from './store/subscription-store';
import { subscriptionHistory } from './store/subscription-history';

runMigration(
  'subscriptions',
  z.object({ ...serviceEnvShape('subscriptions'), ...historyEnvShape }),
  async (db, _, config) => {
    await new SubscriptionStore(db).ensureIndexes();
    await subscriptionHistory(db.db!, config.HISTORY_RETENTION_DAYS).ensureIndexes();
  },
);
