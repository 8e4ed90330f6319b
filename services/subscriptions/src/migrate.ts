// `node services/subscriptions/dist/migrate.js`: creates the indexes of this service's database.
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { SubscriptionStore } from './store/subscription-store';
import { subscriptionHistory } from './store/subscription-history';

runMigration('subscriptions', z.object(serviceEnvShape('subscriptions')), async (db) => {
  await new SubscriptionStore(db).ensureIndexes();
  await subscriptionHistory(db.db!).ensureIndexes();
});
