import type { mongo } from 'mongoose';

/**
 * Who is told that a collection's outbox holds new entries: its relay, in this process. A
 * write that stores entries announces them as it returns, whatever path made the change (a
 * request, a command, a cascade), so the relay publishes them now rather than at its next poll;
 * the poll still finds what another replica wrote.
 */
const listeners = new WeakMap<mongo.Db, Map<string, Set<() => void>>>();

/** Calls `listener` whenever entries are stored in `collection` of `db`; returns how to stop. */
export function whenPending(db: mongo.Db, collection: string, listener: () => void): () => void {
  const byCollection = listeners.get(db) ?? new Map<string, Set<() => void>>();
  listeners.set(db, byCollection);
  const own = byCollection.get(collection) ?? new Set<() => void>();
  byCollection.set(collection, own);
  own.add(listener);
  return () => own.delete(listener);
}

/** Tells `collection`'s listeners that it holds new entries. */
export function announcePending(db: mongo.Db, collection: string): void {
  for (const listener of listeners.get(db)?.get(collection) ?? []) listener();
}
