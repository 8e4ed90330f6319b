// `node services/scheduler/dist/migrate.js`: creates the indexes of this service's database.
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { ExpiryStore } from './store/expiry-store';

runMigration('scheduler', z.object(serviceEnvShape('scheduler')), async (db) => {
  await new ExpiryStore(db).ensureIndexes();
});
