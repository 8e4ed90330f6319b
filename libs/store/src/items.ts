/**
 * One bad item fails alone (docs/api.md): a batch handler processes its items one by one and
 * reports those that failed for a reason of their own (bad data, a bug), so that its
 * neighbours complete; a failure of what every item needs (the database unreachable, a
 * timeout) is transient and fails the whole batch, which the broker then retries.
 */

/** An item of a batch that failed on its own: its position in the batch, and why. */
export interface ItemFailure {
  index: number;
  error: unknown;
}

const TRANSIENT_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  'MongoWaitQueueTimeoutError',
  'MongoOperationTimeoutError',
  'PoolClearedOnNetworkError',
  'MongooseServerSelectionError',
  'ConcurrentChanges',
]);
/**
 * Server errors that say the server is unavailable, not that the operation was wrong: host
 * unreachable or not found, network timeout, shutting down, interrupted at shutdown, not
 * writable or no longer primary, time limit exceeded, socket errors.
 */
const UNAVAILABLE_CODES = new Set([6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);
/** Socket errors the driver lets through as they are (a write to a connection the server closed: EPIPE). */
const NETWORK_CODES = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
/** Mongoose holds operations while the connection is down, and gives up on them after `bufferTimeoutMS`. */
const BUFFERING_TIMED_OUT = /buffering timed out/;

/**
 * Whether an error says nothing about the item it happened on: the store or the network
 * failed, or other writers kept winning. Such an error fails the batch (retried whole); any
 * other fails only its item.
 */
export function isTransient(error: unknown): boolean {
  const { name, errorLabels, message } = (error ?? {}) as { name?: string; errorLabels?: unknown; message?: unknown };
  if (name && TRANSIENT_NAMES.has(name)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (name === 'MongoServerError' && UNAVAILABLE_CODES.has(code as number)) return true;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  // The driver wraps what failed a whole batch of writes (the network, the pool, no server)
  // in a bulk write error that names no document: nothing was said about any one item.
  if (name === 'MongoBulkWriteError' && isEmptyList((error as { writeErrors?: unknown }).writeErrors)) return true;
  if (name === 'MongooseError' && typeof message === 'string' && BUFFERING_TIMED_OUT.test(message)) return true;
  if (error instanceof Error && 'errorLabelSet' in error) {
    const labels = (error as { errorLabelSet?: Set<string> }).errorLabelSet;
    if (labels?.has('RetryableWriteError') || labels?.has('TransientTransactionError')) return true;
  }
  return Array.isArray(errorLabels) && errorLabels.includes('RetryableWriteError');
}

const isEmptyList = (value: unknown): boolean => Array.isArray(value) && value.length === 0;

/**
 * Runs `each` for every item; an item whose `each` throws a non-transient error is recorded
 * as failed and left out, a transient error is thrown. Results of the others, in order.
 */
export function eachItem<T, R>(
  items: readonly T[],
  each: (item: T, index: number) => R,
  failed: ItemFailure[],
): Array<{ index: number; value: R }> {
  const done: Array<{ index: number; value: R }> = [];
  items.forEach((item, index) => {
    try {
      done.push({ index, value: each(item, index) });
    } catch (error) {
      if (isTransient(error)) throw error;
      failed.push({ index, error });
    }
  });
  return done;
}

/** Why an item failed, short enough to keep beside it. */
export const reasonOf = (error: unknown): string => String((error as Error)?.message ?? error).slice(0, 500);

/** A write of a batch that failed on its own (see `OutboxCollection.compareAndSetMany`). */
export class WriteFailed {
  constructor(readonly error: unknown) {}
}

/** MongoDB's duplicate key error: an insert found its `_id` (or a unique key) taken. */
export function isDuplicateKey(error: unknown): boolean {
  const { code, writeErrors } = error as { code?: number; writeErrors?: Array<{ code?: number }> };
  if (code === 11000) return true;
  return Array.isArray(writeErrors) && writeErrors.length > 0 && writeErrors.every((e) => e.code === 11000);
}
