import type { mongo } from 'mongoose';
import { serverLimits } from './server-limits';

/** An index a collection's queries need: its keys and the driver's options (name, sparse, unique…). */
export type IndexSpec = mongo.IndexDescription & { name: string };

/**
 * A query a hot or periodic path makes, and what serves it on each server: on MongoDB the
 * indexes the migration creates; on FerretDB 1.x, which answers only top-level equality from
 * an index, the GIN index on each of `ferretdb`'s fields, or, when none serves it, a scan that
 * `scan` says why is affordable.
 */
export interface IndexedQuery {
  /** The query and the path that makes it, as an operator reads it. */
  readonly query: string;
  /** Served on MongoDB by these (none: by the `_id` index every collection has). */
  readonly mongodb: readonly IndexSpec[];
  readonly ferretdb: readonly string[];
  readonly scan?: string;
}

/**
 * A collection's queries and their indexes, declared once, beside its store: the migration
 * creates what they name, and `npm run docs` writes the FerretDB indexes
 * (deploy/local/ferretdb-indexes.sql) and the table of docs/operations.md from them.
 */
export interface CollectionIndexes {
  readonly collection: string;
  readonly queries: readonly IndexedQuery[];
}

/** Reads and compare-and-sets of one document by `_id`: MongoDB's own index; on FerretDB, a GIN index of ours. */
export const BY_ID: IndexedQuery = {
  query: 'a document by `_id` (reads, compare-and-sets)',
  mongodb: [],
  ferretdb: ['_id'],
};

/** A grantor's documents, for `readers` (a list, a per-grantor limit, a match by grantor). */
export const byGrantor = (readers: string): IndexedQuery => ({
  query: `a grantor's documents (${readers})`,
  mongodb: [{ key: { grantorId: 1, deleted: 1 }, name: 'by_grantor' }],
  ferretdb: ['grantorId'],
});

/** The MongoDB indexes a collection's queries name, each once. */
export const mongoIndexesOf = ({ queries }: CollectionIndexes): IndexSpec[] => [
  ...new Map(queries.flatMap(({ mongodb }) => mongodb).map((index) => [index.name, index])).values(),
];

/** The fields a collection's GIN indexes cover on FerretDB, each once. */
export const ginFieldsOf = ({ queries }: CollectionIndexes): string[] => [
  ...new Set(queries.flatMap(({ ferretdb }) => ferretdb)),
];

/**
 * Makes a collection's indexes match what its queries need, the one way every store does it
 * (its `ensureIndexes`, a migration step; creating an index that exists costs nothing). On a
 * server that answers from a driver's indexes (MongoDB) the declared ones are created.
 * FerretDB 1.x never does: it filters with jsonb containment that only the GIN indexes of
 * deploy/local/ferretdb-indexes.sql serve (generated from the same declarations), and it turns
 * each driver index into a PostgreSQL B-tree that every insert updates and no query reads
 * (docs/performance.md, "Measurements behind the code"). There, only unique indexes
 * (constraints) are created, and any other an earlier release created is dropped
 * (docs/decisions/0031).
 */
export async function declareIndexes(db: mongo.Db, declaration: CollectionIndexes): Promise<void> {
  const { collection: name } = declaration;
  const indexes = mongoIndexesOf(declaration);
  const collection = db.collection(name);
  declared.set(db, { ...declared.get(db), [name]: indexes.map((index) => index.name) });
  const { usesDriverIndexes } = await serverLimits(db);
  if (usesDriverIndexes) return declareOnMongoDb(db, name, indexes);
  const wanted = indexes.filter((index) => index.unique);
  if (wanted.length > 0) await collection.createIndexes([...wanted]);
  // The collection made now, not by the first writes (its GIN indexes come with its table).
  await createdOnFerretDb(db, name);
  for (const index of await collection.indexes())
    if (index.name && index.name !== '_id_' && !index.unique)
      await collection.dropIndex(index.name).catch((error: unknown) => {
        // Another replica starting at the same time dropped it first.
        if ((error as { code?: number }).code !== INDEX_NOT_FOUND) throw error;
      });
}

/**
 * On MongoDB: the declared indexes created, a TTL index whose retention changed given its new
 * one (`collMod`: an index cannot be created again with other options), and a TTL index no
 * longer declared (its retention unset) dropped: every TTL index is a retention's.
 */
async function declareOnMongoDb(db: mongo.Db, name: string, indexes: readonly IndexSpec[]): Promise<void> {
  const collection = db.collection(name);
  const existing = await collection.indexes().catch(() => []); // none before the collection exists
  for (const index of indexes) {
    const found = existing.find((one) => one.name === index.name);
    if (found && index.expireAfterSeconds !== undefined && found.expireAfterSeconds !== index.expireAfterSeconds)
      await db.command({ collMod: name, index: { name: index.name, expireAfterSeconds: index.expireAfterSeconds } });
  }
  if (indexes.length > 0) await collection.createIndexes([...indexes]);
  for (const stale of existing.filter(
    (one) => one.expireAfterSeconds !== undefined && !indexes.some((index) => index.name === one.name),
  ))
    await collection.dropIndex(stale.name!);
}

/**
 * Creates a collection on FerretDB. Its catalog of databases is read whole when a connection
 * pool starts, and fails when another database is being dropped meanwhile (`relation
 * "<db>._ferretdb_database_metadata" does not exist`); asked again, it reads the catalog anew.
 */
async function createdOnFerretDb(db: mongo.Db, name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.createCollection(name);
      return;
    } catch (error) {
      if ((error as { code?: number }).code === NAMESPACE_EXISTS) return;
      const droppedMeanwhile = /_ferretdb_database_metadata" does not exist/.test(String((error as Error)?.message));
      if (!droppedMeanwhile || attempt === 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

/** MongoDB's (and FerretDB's) error code for a collection that exists already. */
const NAMESPACE_EXISTS = 48;
const INDEX_NOT_FOUND = 27;

const declared = new WeakMap<mongo.Db, Record<string, string[]>>();

/**
 * The indexes declared on `db` so far, by collection: what a migration reports (those a
 * MongoDB deployment has; on FerretDB the GIN indexes of ferretdb-indexes.sql serve instead).
 */
export function declaredIndexes(db: mongo.Db): Record<string, string[]> {
  return { ...declared.get(db) };
}
