// `node services/rights/dist/migrate.js`: this service's migration steps, each applied once
// per database (docs/operations.md): its collections' indexes, and the re-sealing of the
// right-token keys after RIGHT_TOKEN_KEY_SECRET changed.
import { secretRing } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { applyOnce } from '@rs/store';
import { Config } from './service';
import { collectionIndexes } from './store/indexes';
import { SigningKeyStore } from './store/signing-key-store';

runMigration('rights', Config, {
  indexes: (config) => collectionIndexes(config.HISTORY_RETENTION_DAYS),
  steps: async (db, logger, config) => {
    const keys = new SigningKeyStore(db, secretRing(config, 'RIGHT_TOKEN_KEY_SECRET'));
    await applyOnce(db.db!, `right_token_keys:sealed-with:${keys.sealingKeyId}`, async () => {
      logger.info({ resealed: await keys.reseal() }, 'right-token keys sealed with the current key');
    });
  },
});
