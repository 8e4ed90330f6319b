import { Schema } from 'mongoose';
import { storedEntries, type OutboxEntry, type StoredOutboxEntry } from './outbox-entry';
import type { IndexedQuery } from './indexes';

/** Fields a document needs to carry an outbox. */
export const outboxFields = {
  /**
   * A `PendingKey` while `outbox` may hold entries, false when it holds none: the relay finds
   * pending documents by equality on it, which every store can answer from an index (FerretDB
   * cannot push `$exists` on an array element down to its backend and would read every
   * document; docs/decisions/0010, 0021).
   */
  outboxPending: { type: Schema.Types.Mixed, default: false },
  outbox: {
    type: [
      new Schema(
        {
          id: { type: String, required: true },
          exchange: { type: String, required: true },
          event: { type: Schema.Types.Mixed, required: true },
          trace: { type: Schema.Types.Mixed, default: {} },
          createdAt: { type: Date, required: true },
        },
        { _id: false, minimize: false },
      ),
    ],
    default: [],
  },
};

/**
 * The fields every document of the one store mechanism has (`OutboxStore`): its id, the
 * generation its compare-and-sets are made on, its times, and its outbox.
 */
export const outboxDocumentFields = {
  /** `bucketOf(_id)`: every document of a collection is read a bucket at a time, each by equality. */
  bucket: { type: Number },
  generation: 'number',
  createdAt: 'date',
  updatedAt: 'date',
  ...outboxFields,
} as const;

/**
 * What `outboxPending` holds: false when nothing is pending, else the key of the second the
 * pending events were written in (1–64, the second modulo 64; docs/decisions/0021). The relay
 * reads one key at a time by equality, so a read returns the documents of that second, not
 * the whole backlog: FerretDB applies a limit only after reading every row a filter matches.
 */
export type PendingKey = number | false;
export const PENDING_KEYS = 64;
/** The key of documents made pending at `at` (ms since the epoch). */
export const pendingKeyAt = (at: number): number => 1 + (Math.floor(at / 1000) % PENDING_KEYS);

/**
 * The stamp a compare-and-set leaves on FerretDB, for its PostgreSQL guard
 * (deploy/local/ferretdb-compare-and-set.sql, docs/decisions/0046): the generations the write
 * may find, and a token of its own. Never part of an entity.
 */
export const CAS_FIELD = '_cas';

/** The outbox fields of a new document carrying `entries`. */
export function newOutbox(entries: OutboxEntry[]): { outbox: StoredOutboxEntry[]; outboxPending: PendingKey } {
  return { outbox: storedEntries(entries), outboxPending: entries.length > 0 ? pendingKeyAt(Date.now()) : false };
}

/**
 * An update that sets `fields` and appends `entries` to the document's outbox, in one write,
 * pending under `pendingKey` (by default, the key of now).
 */
export function setWithOutbox(fields: object, entries: OutboxEntry[], pendingKey = pendingKeyAt(Date.now())): object {
  if (entries.length === 0) return { $set: fields };
  return {
    $set: { ...fields, outboxPending: pendingKey },
    $push: { outbox: { $each: storedEntries(entries) } },
  };
}

/**
 * What reads of entities leave out: the outbox, and its flag. An entity that carried the flag
 * would write it back with its next change, and a flag read while events were pending, written
 * back after the relay had cleared them, left the document pending with nothing to publish.
 */
export const OUTBOX_PROJECTION = { outbox: 0, outboxPending: 0, [CAS_FIELD]: 0 } as const;

/** The relay's query, on every collection that carries an outbox: one equality on the flag. */
export const PENDING_EVENTS: IndexedQuery = {
  query: 'pending events (outbox relay, every 0.5 s)',
  mongodb: [{ key: { outboxPending: 1 }, name: 'outbox_pending_flag' }],
  ferretdb: ['outboxPending'],
};
