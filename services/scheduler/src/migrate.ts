// `node services/scheduler/dist/migrate.js`: creates the indexes of this service's database.
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { createStores } from './store/stores';

runMigration('scheduler', z.object(serviceEnvShape('scheduler')), async (db) => {
  const stores = createStores(db);
  await stores.rightExpiries.ensureIndexes();
  await stores.subscriptionSchedules.ensureIndexes();
});
