import type { mongo, Schema } from 'mongoose';
import { serverLimits } from './server-limits';

/** An index a collection's queries need: its keys and the driver's options (name, sparse, unique…). */
export type IndexSpec = mongo.IndexDescription & { name: string };

/**
 * Makes a collection's indexes match what its queries need, the one way every store does it (its `ensureIndexes` step)
 * (a migration step; creating an index that exists costs nothing). On a server that answers
 * from a driver's indexes (MongoDB) the declared ones are created. FerretDB 1.x never does:
 * it filters with jsonb containment that only the GIN indexes of
 * deploy/local/ferretdb-indexes.sql serve, and it turns each driver index into a PostgreSQL
 * B-tree that every insert updates and no query reads (docs/performance.md, "Measurements behind the code"). There, only unique indexes (constraints) are created, and any other an earlier
 * release created is dropped (docs/decisions/0031).
 */
export async function declareIndexes(db: mongo.Db, name: string, indexes: readonly IndexSpec[]): Promise<void> {
  const collection = db.collection(name);
  declared.set(db, { ...declared.get(db), [name]: indexes.map((index) => index.name) });
  const { usesDriverIndexes } = await serverLimits(db);
  if (usesDriverIndexes) return declareOnMongoDb(db, name, indexes);
  const wanted = indexes.filter((index) => index.unique);
  if (wanted.length > 0) await collection.createIndexes([...wanted]);
  // The collection made now, not by the first writes (its GIN indexes come with its table).
  await db.createCollection(name).catch((error: unknown) => {
    if ((error as { code?: number }).code !== NAMESPACE_EXISTS) throw error;
  });
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

/** The indexes a mongoose schema declares, as `declareIndexes` takes them. */
export function indexesOf(schema: Schema): IndexSpec[] {
  return schema.indexes().map(([key, options]) => {
    const { name, ...rest } = options as mongo.CreateIndexesOptions;
    if (!name) throw new Error(`an index of ${JSON.stringify(key)} has no name`); // names are how they are dropped and listed
    return { key: key as mongo.IndexDescription['key'], name, ...rest } as IndexSpec;
  });
}
