// `node services/catalog/dist/migrate.js`: creates the indexes of this service's database.
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { SkuStore } from './store/sku-store';

runMigration('catalog', z.object(serviceEnvShape('catalog')), async (db) => {
  await new SkuStore(db).ensureIndexes();
});
