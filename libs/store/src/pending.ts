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
 * What a write of this process made pending: the documents it inserted, as stored, or the key
 * it made a changed document pending under (a change does not know the document's whole
 * outbox, which may hold earlier entries). Either way the relay knows where to read, however
 * long the write took (docs/decisions/0072).
 */
export type PendingWrite = { inserted: readonly InsertedPending[] } | { changedUnder: number };

/** Told of each write that stored entries. */
export type PendingListener = (written: PendingWrite) => void;

/** Calls `listener` whenever entries are stored in `collection` of `db`; returns how to stop. */
export function whenPending(db: mongo.Db, collection: string, listener: PendingListener): () => void {
  const byCollection = listeners.get(db) ?? new Map<string, Set<PendingListener>>();
  listeners.set(db, byCollection);
  const own = byCollection.get(collection) ?? new Set<PendingListener>();
  byCollection.set(collection, own);
  own.add(listener);
  return () => own.delete(listener);
}

/** Tells `collection`'s listeners what a write made pending. */
export function announcePending(db: mongo.Db, collection: string, written: PendingWrite): void {
  for (const listener of listeners.get(db)?.get(collection) ?? []) listener(written);
}
