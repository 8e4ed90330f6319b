import { historyIndexes, listCounterIndexes, type CollectionIndexes } from '@rs/store';
import { SUBSCRIPTION_HISTORY } from './subscription-history';
import { PROGRESS_INDEXES, SUBSCRIPTION_INDEXES } from './subscription-store';

/**
 * Every collection of this service's database that a hot or periodic path queries, with its
 * queries and their indexes as its store declares them: what the migration creates, and what
 * `npm run docs` writes into docs/operations.md and deploy/local/ferretdb-index-fields.sql.
 */
export const collectionIndexes = (historyRetentionDays?: number): CollectionIndexes[] => [
  SUBSCRIPTION_INDEXES,
  listCounterIndexes('subscriptions'),
  PROGRESS_INDEXES,
  historyIndexes(SUBSCRIPTION_HISTORY, historyRetentionDays),
];
