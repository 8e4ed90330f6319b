import { createHash } from 'node:crypto';

/**
 * Idempotency-Key (DESIGN.md 8): which requests may carry one, what makes two requests the
 * same, and what a kept record means for a new request with its key. Pure: no I/O.
 */

/** 1–255 visible ASCII characters. */
const KEY = /^[\x21-\x7e]{1,255}$/;

export const isValidIdempotencyKey = (key: string): boolean => KEY.test(key);

/** POST and DELETE under /id/users/… (the operations a service owns). */
export const takesIdempotencyKey = (method: string, path: string): boolean =>
  (method === 'POST' || method === 'DELETE') && path.startsWith('/id/users/');

/** What makes a retry the same request: its method, its path and query, and its body. */
export function fingerprintOf(method: string, url: string, body: Buffer): string {
  return createHash('sha256').update(`${method}\n${url}\n`).update(body).digest('base64url');
}

/**
 * The id a create made with this client's key gives its resource, so that a create retried
 * after a crash finds the resource of its first attempt instead of making another.
 */
export const resourceIdOf = (clientId: string, key: string): string =>
  createHash('sha256').update(`${clientId}\n${key}`).digest('hex').slice(0, 32);

/** A response is kept for replay unless a retry should run again: 5xx and 429. */
export const keepsResponse = (status: number): boolean => status < 500 && status !== 429;

export interface KeptRequest {
  fingerprint: string;
  state: 'running' | 'done';
  /** running: until when the first attempt owns the key; after that a retry takes over. */
  leaseUntil: Date;
  /** done: until when the response is kept. */
  expiresAt: Date;
}

export type OnRetry = 'replay' | 'mismatch' | 'running' | 'take-over';

/** What a request with a key already kept gets. */
export function onRetry(kept: KeptRequest, fingerprint: string, now: Date): OnRetry {
  const expired = kept.state === 'done' ? kept.expiresAt <= now : kept.leaseUntil <= now;
  if (expired) return 'take-over';
  if (kept.fingerprint !== fingerprint) return 'mismatch';
  return kept.state === 'done' ? 'replay' : 'running';
}
