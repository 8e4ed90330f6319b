import type { mongo } from 'mongoose';
import type { PendingKey } from './outbox';
import type { StoredOutboxEntry } from './outbox-entry';

/**
 * Who is told that a collection's outbox holds new entries: its relay, in this process. A
 * write that stores entries announces them as it returns, whatever path made the change (a
 * request, a command, a cascade), so the relay publishes them now rather than at its next poll;
 * the poll still finds what another replica wrote.
 */
const listeners = new WeakMap<mongo.Db, Map<string, Set<PendingListener>>>();

/**
 * A document a write of this process has just inserted with events, as it was stored: the
 * relay can publish them without reading the document back (docs/decisions/0068).
 */
export interface InsertedPending {
  _id: unknown;
  generation?: number;
  outboxPending: PendingKey;
  outbox: StoredOutboxEntry[];
}

/**
 * Told of new entries: the documents inserted with them, or `undefined` when the write does
 * not know a document's whole outbox (a change of a document that may hold earlier entries).
 */
export type PendingListener = (inserted: readonly InsertedPending[] | undefined) => void;

/** Calls `listener` whenever entries are stored in `collection` of `db`; returns how to stop. */
export function whenPending(db: mongo.Db, collection: string, listener: PendingListener): () => void {
  const byCollection = listeners.get(db) ?? new Map<string, Set<PendingListener>>();
  listeners.set(db, byCollection);
  const own = byCollection.get(collection) ?? new Set<PendingListener>();
  byCollection.set(collection, own);
  own.add(listener);
  return () => own.delete(listener);
}

/** Tells `collection`'s listeners that it holds new entries (in `inserted`, when that is all of them). */
export function announcePending(db: mongo.Db, collection: string, inserted?: readonly InsertedPending[]): void {
  for (const listener of listeners.get(db)?.get(collection) ?? []) listener(inserted);
}
