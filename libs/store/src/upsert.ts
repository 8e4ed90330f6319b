import type { mongo } from 'mongoose';
import { isDuplicateKey } from './items';

/** Attempts of one upsert: each lost race means the document now exists, so the next one updates it. */
const ATTEMPTS = 3;

/**
 * `updateOne` with `upsert` of the document `filter` names by `_id`, safe when others make the
 * same document at the same moment (docs/decisions/0080): MongoDB retries such a race itself,
 * FerretDB answers every writer but one with a duplicate key error. That writer lost only the
 * insert, so its update is made again, and then finds the document. Resolves with the driver's
 * result: `upsertedCount` is 1 for the one write that created the document.
 */
export async function upsertOne<D extends mongo.Document>(
  collection: mongo.Collection<D>,
  filter: mongo.Filter<D>,
  update: mongo.UpdateFilter<D>,
): Promise<mongo.UpdateResult<D>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await collection.updateOne(filter, update, { upsert: true });
    } catch (error) {
      if (attempt >= ATTEMPTS || !isDuplicateKey(error)) throw error;
    }
  }
}
