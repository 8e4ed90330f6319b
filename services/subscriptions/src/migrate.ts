// `node services/subscriptions/dist/migrate.js`: creates the indexes of this service's database.
import { historyEnvShape, serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { collectionIndexes } from './store/indexes';

runMigration('subscriptions', z.object({ ...serviceEnvShape('subscriptions'), ...historyEnvShape }), {
  indexes: (config) => collectionIndexes(config.HISTORY_RETENTION_DAYS),
});
