import type { CollectionIndexes } from '@rs/store';
import { CLOCK_INDEXES, CLOCK_PLACES_INDEXES } from './clock-store';
import { dueIndexes } from './due-store';
import { HOLD_EXPIRIES, RIGHT_EXPIRIES, SUBSCRIPTION_SCHEDULES } from './stores';

/**
 * Every collection of this service's database that a hot or periodic path queries, with its
 * queries and their indexes as its store declares them: what the migration creates, and what
 * `npm run docs` writes into docs/operations.md and deploy/local/ferretdb-index-fields.sql.
 */
export const collectionIndexes = (): CollectionIndexes[] => [
  dueIndexes(RIGHT_EXPIRIES),
  dueIndexes(SUBSCRIPTION_SCHEDULES),
  dueIndexes(HOLD_EXPIRIES),
  CLOCK_INDEXES,
  CLOCK_PLACES_INDEXES,
];
