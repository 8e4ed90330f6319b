import type { CollectionIndexes } from '@rs/store';
import { auditIndexes } from './audit-store';
import { IDEMPOTENCY_INDEXES } from './idempotency-store';
import { REVOCATION_INDEXES } from './revocation-store';
import { USER_INDEXES } from './user-store';

/**
 * Every collection of this service's database that a hot or periodic path queries, with its
 * queries and their indexes as its store declares them: what the migration creates, and what
 * `npm run docs` writes into docs/operations.md and deploy/local/ferretdb-index-fields.sql.
 */
export const collectionIndexes = (auditRetentionDays: number): CollectionIndexes[] => [
  IDEMPOTENCY_INDEXES,
  REVOCATION_INDEXES,
  USER_INDEXES,
  ...auditIndexes(auditRetentionDays),
];
