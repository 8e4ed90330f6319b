// `node services/gateway/dist/migrate.js`: creates the indexes of the gateway's own database
// (the ranges its idempotency keys and revoked tokens are read and purged by, the audit log's lists).
import { serviceEnvShape } from '@rs/config';
import { runMigration } from '@rs/runtime';
import { z } from 'zod';
import { collectionIndexes } from './store/indexes';
import { AuditRetention } from './domain/audit';

runMigration('gateway', z.object({ ...serviceEnvShape('gateway'), AUDIT_RETENTION: AuditRetention }), {
  indexes: (config) => collectionIndexes(config.AUDIT_RETENTION),
});
