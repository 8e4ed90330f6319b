import type { CollectionIndexes } from '@rs/store';
import { deliveryIndexes, holdIndexes, outcomeIndexes } from './delivery-store';
import { ENDPOINT_INDEXES } from './endpoint-store';

/**
 * Every collection of this service's database that a hot or periodic path queries, with its
 * queries and their indexes as its store declares them: what the migration creates, and what
 * `npm run docs` writes into docs/operations.md and deploy/local/ferretdb-index-fields.sql.
 */
export const collectionIndexes = (deliveryRetentionDays?: number): CollectionIndexes[] => [
  deliveryIndexes(deliveryRetentionDays),
  outcomeIndexes(deliveryRetentionDays),
  holdIndexes(deliveryRetentionDays),
  ENDPOINT_INDEXES,
];
