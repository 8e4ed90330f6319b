// `node services/subscriptions/dist/migrate.js`: creates the indexes of this service's database,
// and places the subscriptions stored before lists were kept in their lists.
import { historyEnvShape, serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { applyOnce } from '@rs/store';
import { z } from 'zod';
import { collectionIndexes } from './store/indexes';
import { SubscriptionStore } from './store/subscription-store';

runMigration('subscriptions', z.object({ ...serviceEnvShape('subscriptions'), ...historyEnvShape }), {
  indexes: (config) => collectionIndexes(config.HISTORY_RETENTION_DAYS),
  steps: async (db, logger) => {
    await applyOnce(db.db!, 'subscriptions:placed-in-lists', async () => {
      logger.info({ placed: await new SubscriptionStore(db).placeUnlisted() }, 'subscriptions placed in their lists');
    });
  },
});
