// `node services/webhooks/dist/migrate.js`: this service's migration steps, each applied once
// per database (DESIGN.md 10): its indexes, and the re-sealing of the endpoints' secrets after
// WEBHOOK_SECRET_KEY changed.
import { secretRing } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { applyOnce } from '@rs/store';
import { Sealer } from '@rs/sealing';
import { Config, ENDPOINT_SECRETS_PURPOSE } from './service';
import { DeliveryStore } from './store/delivery-store';
import { EndpointStore } from './store/endpoint-store';

runMigration('webhooks', Config, async (db, logger, config) => {
  await new DeliveryStore(db.db!, config.WEBHOOK_DELIVERY_RETENTION_DAYS).ensureIndexes();
  const endpoints = new EndpointStore(db.db!);
  await endpoints.ensureIndexes();
  const sealer = new Sealer(secretRing(config, 'WEBHOOK_SECRET_KEY'), ENDPOINT_SECRETS_PURPOSE);
  await applyOnce(db.db!, `endpoints:secrets-sealed-with:${sealer.keyId}`, async () => {
    logger.info({ resealed: await endpoints.resealSecrets(sealer) }, 'endpoint secrets sealed with the current key');
  });
});
