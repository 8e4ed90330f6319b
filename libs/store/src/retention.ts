import { repeat, type Clock, type Repeating } from '@rs/time';
import type { mongo } from 'mongoose';
import type { IndexedQuery } from './indexes';
import { serverLimits } from './server-limits';

/**
 * How long a collection keeps its documents (docs/operations.md, docs/decisions/0032): a document
 * goes once its `field` (a date) is older than `days`. Unset, documents are kept.
 */
export interface Retention {
  field: string;
  days: number;
}

/** The retention of `days` on `field`; none when `days` is unset. */
export const retentionOf = (field: string, days: number | undefined): Retention | undefined =>
  days === undefined ? undefined : { field, days };

/** A collection and its retention: what a store hands `purgeExpired`. */
export interface RetainedCollection {
  db: mongo.Db;
  collection: string;
  retention: Retention | undefined;
}

/** The name of a collection's TTL index: the one index `declareIndexes` also drops when no longer declared. */
export const RETENTION_INDEX = 'retention';

const DAY_MS = 86_400_000;

/**
 * The purge of a retention: on MongoDB the TTL index that applies it (created by the migration;
 * a changed number of days is applied to the existing index); on FerretDB, which has no TTL
 * indexes, the service's hourly purge (`purgeExpired`). None without a retention.
 */
export const retentionQueries = (retention: Retention | undefined): IndexedQuery[] =>
  retention
    ? [
        {
          query: `purge of documents whose \`${retention.field}\` is past the retention (if set)`,
          mongodb: [
            {
              key: { [retention.field]: 1 },
              name: RETENTION_INDEX,
              expireAfterSeconds: (retention.days * DAY_MS) / 1000,
            },
          ],
          ferretdb: [],
          scan: "the service's hourly purge",
        },
      ]
    : [];

/** How often a FerretDB deployment purges what its retention no longer keeps. */
export const PURGE_EVERY_MS = 3_600_000;

/**
 * Applies a retention where the server has no TTL indexes: FerretDB 1.x creates none (and
 * would not expire documents by one), so there the service deletes what has expired itself,
 * at start and every PURGE_EVERY_MS. A range on a date reaches no index on FerretDB: each
 * purge reads the collection (docs/operations.md "Retention"). On MongoDB it does nothing:
 * the TTL index does it.
 */
export function purgeExpired(
  { db, collection, retention }: RetainedCollection,
  options: { clock: Clock; onPurged(deleted: number): void; onError(error: unknown): void },
): Repeating {
  const { clock } = options;
  return repeat(
    async () => {
      if (!retention || (await serverLimits(db)).usesDriverIndexes) return;
      const cutoff = new Date(clock().getTime() - retention.days * DAY_MS);
      const { deletedCount } = await db.collection(collection).deleteMany({ [retention.field]: { $lt: cutoff } });
      if (deletedCount > 0) options.onPurged(deletedCount);
    },
    { everyMs: PURGE_EVERY_MS, retryMs: 60_000, onError: options.onError },
  );
}
