// `node services/gateway/dist/migrate.js`: creates the indexes of the gateway's own database
// (the ranges its idempotency keys and revoked tokens are read and purged by).
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { systemClock } from '@rs/time';
import { z } from 'zod';
import { IdempotencyStore } from './store/idempotency-store';
import { RevocationStore } from './store/revocation-store';

runMigration('gateway', z.object(serviceEnvShape('gateway')), async (db, logger) => {
  await new IdempotencyStore(db, systemClock).ensureIndexes();
  await new RevocationStore(db, { logger, minimumMs: 0 }).ensureIndexes();
});
