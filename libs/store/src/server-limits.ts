import pLimit from 'p-limit';
import { chunks } from '@rs/batching';
import type { mongo } from 'mongoose';

export interface ServerLimits {
  /**
   * The server answers from the indexes a driver creates. FerretDB 1.x does not: it filters
   * with jsonb containment that only the GIN indexes of deploy/local/ferretdb-indexes.sql
   * serve, so a driver index there only costs writes.
   */
  usesDriverIndexes: boolean;
  /** Single-document updates in flight at once for a batch (never one many-statement command). */
  updateConcurrency: number;
  /** Documents per `insertMany` call. */
  maxInsertDocuments: number;
  /** `insertMany` calls of one batch under way at once (`inChunks`). */
  insertsAtOnce: number;
}

/**
 * FerretDB 1.24 on PostgreSQL keeps one pooled connection per statement of an update
 * command until the whole command ends: more statements than its pool has connections
 * deadlocks it for good, and it runs the statements of one command one after another
 * anyway, so single updates in flight are faster than one bulk write (docs/performance.md, "Measurements behind the code"). So a batch
 * of updates is sent as single-document compare-and-sets, 16 in flight on FerretDB and more
 * on MongoDB (docs/architecture.md, docs/decisions/0011).
 */
const FERRETDB: ServerLimits = {
  usesDriverIndexes: false,
  updateConcurrency: 16,
  maxInsertDocuments: 250,
  insertsAtOnce: 4,
};
const MONGODB: ServerLimits = {
  usesDriverIndexes: true,
  updateConcurrency: 64,
  maxInsertDocuments: 1000,
  insertsAtOnce: 4,
};

const known = new WeakMap<mongo.Db, Promise<ServerLimits>>();

/** The limits of the server behind `db`, asked once (FerretDB names itself in buildInfo). */
export function serverLimits(db: mongo.Db): Promise<ServerLimits> {
  let limits = known.get(db);
  if (!limits) {
    limits = db
      .admin()
      .command({ buildInfo: 1 })
      .then((info) => ('ferretdbVersion' in info ? FERRETDB : MONGODB))
      .catch(() => FERRETDB); // unknown: the safe choice
    known.set(db, limits);
  }
  return limits;
}

/**
 * `insert` of `items` in chunks of the server's `maxInsertDocuments`, `insertsAtOnce` of them
 * under way at once; each chunk's result, in order. FerretDB converts and inserts the documents
 * of one call one after another on one connection: a large batch (a renewal's rights) split
 * over a few calls is stored in a fraction of the time (docs/performance.md).
 */
export async function inChunks<T, R>(
  db: mongo.Db,
  items: readonly T[],
  insert: (chunk: T[]) => Promise<R>,
): Promise<R[]> {
  const { maxInsertDocuments, insertsAtOnce } = await serverLimits(db);
  // Every call ends before the batch fails: a caller that retries it races none of its own.
  const limit = pLimit(insertsAtOnce);
  const outcomes = await Promise.allSettled(
    chunks(items, maxInsertDocuments).map((chunk) => limit(() => insert(chunk))),
  );
  const failed = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return outcomes.map((outcome) => (outcome as PromiseFulfilledResult<R>).value);
}
