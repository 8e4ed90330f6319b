import { historyIndexes, listCounterIndexes, type CollectionIndexes } from '@rs/store';
import { RIGHT_HISTORY } from './right-history';
import { RIGHT_INDEXES } from './right-store';
import { CONSUMPTION_INDEXES } from './consumption-store';

/**
 * Every collection of this service's database that a hot or periodic path queries, with its
 * queries and their indexes as its store declares them: what the migration creates, and what
 * `npm run docs` writes into docs/operations.md and deploy/local/ferretdb-index-fields.sql.
 */
export const collectionIndexes = (historyRetentionDays?: number): CollectionIndexes[] => [
  RIGHT_INDEXES,
  listCounterIndexes('rights'),
  CONSUMPTION_INDEXES,
  historyIndexes(RIGHT_HISTORY, historyRetentionDays),
];
