// `node services/webhooks/dist/migrate.js`: creates the indexes of this service's database.
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { DeliveryStore } from './store/delivery-store';
import { EndpointStore } from './store/endpoint-store';

runMigration('webhooks', z.object(serviceEnvShape('webhooks')), async (db) => {
  await new DeliveryStore(db.db!).ensureIndexes();
  await new EndpointStore(db.db!).ensureIndexes();
});
