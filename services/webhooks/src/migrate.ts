// `node services/webhooks/dist/migrate.js`: this service's migration steps, each applied once
// per database (docs/operations.md): its indexes, and the re-sealing of the endpoints' secrets after
// WEBHOOK_SECRET_KEY changed.
import { secretRing } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { applyOnce } from '@rs/store';
import { Sealer } from '@rs/sealing';
import { Config, ENDPOINT_SECRETS_PURPOSE } from './service';
import { EndpointStore } from './store/endpoint-store';
import { collectionIndexes } from './store/indexes';

runMigration('webhooks', Config, {
  indexes: (config) => collectionIndexes(config.WEBHOOK_DELIVERY_RETENTION_DAYS),
  steps: async (db, logger, config) => {
    const endpoints = new EndpointStore(db.db!);
    const sealer = new Sealer(secretRing(config, 'WEBHOOK_SECRET_KEY'), ENDPOINT_SECRETS_PURPOSE);
    await applyOnce(db.db!, `endpoints:secrets-sealed-with:${sealer.keyId}`, async () => {
      logger.info({ resealed: await endpoints.resealSecrets(sealer) }, 'endpoint secrets sealed with the current key');
    });
  },
});
