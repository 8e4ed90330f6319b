// `node services/rights/dist/migrate.js`: creates the indexes of this service's database.
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { RightStore } from './store/right-store';
import { rightHistory } from './store/right-history';

runMigration('rights', z.object(serviceEnvShape('rights')), async (db) => {
  await new RightStore(db, () => []).ensureIndexes();
  await rightHistory(db.db!).ensureIndexes();
});
