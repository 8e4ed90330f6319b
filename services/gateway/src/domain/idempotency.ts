import { createHash } from 'node:crypto';
import { IdempotencyKey } from '@rs/contracts';

/**
 * Idempotency-Key (docs/api.md): which requests may carry one, what makes two requests the
 * same, and what a kept record means for a new request with its key. Pure: no I/O.
 */

export const isValidIdempotencyKey = (key: string): boolean => IdempotencyKey.safeParse(key).success;

/** What makes a retry the same request: its method, its path and query, and its body. */
export function fingerprintOf(method: string, url: string, body: Buffer): string {
  return createHash('sha256').update(`${method}\n${url}\n`).update(body).digest('base64url');
}

/**
 * The id a create made with this client's key gives its resource, so that a create retried
 * after a crash finds the resource of its first attempt instead of making another. `nonce`
 * is drawn when the key is first claimed and kept with it for IDEMPOTENCY_TTL_S: every
 * attempt of one request gets the same id, and the key used again once it is forgotten
 * makes a new resource rather than finding the old one.
 */
export const resourceIdOf = (clientId: string, key: string, nonce: string): string =>
  createHash('sha256').update(`${clientId}\n${key}\n${nonce}`).digest('hex').slice(0, 32);

/** A response is kept for replay unless a retry should run again: 5xx and 429. */
export const keepsResponse = (status: number): boolean => status < 500 && status !== 429;

export interface KeptRequest {
  fingerprint: string;
  /**
   * running: an attempt is under way; released: the last attempt got no answer worth keeping
   * (a 5xx, a 429, none at all) and the next one runs again; done: its response is kept.
   */
  state: 'running' | 'released' | 'done';
  /** running: until when the attempt under way owns the key; after that a retry takes over. */
  leaseUntil: Date;
  /**
   * Until when the key is bound to its request (IDEMPOTENCY_TTL_S from its first use, or
   * from the response kept): another request with it is refused (422), a done one replayed.
   */
  expiresAt: Date;
}

/**
 * What a request with an existing key gets: `new` once the key is forgotten (it starts
 * afresh, as a key never seen), `mismatch` for another request, `replay` of the kept
 * response, `running` while another attempt owns it, `take-over` (run again, as the same
 * attempt) after a release or a crash.
 */
export type OnRetry = 'new' | 'mismatch' | 'replay' | 'running' | 'take-over';

export function onRetry(kept: KeptRequest, fingerprint: string, now: Date): OnRetry {
  if (kept.expiresAt <= now) return 'new';
  if (kept.fingerprint !== fingerprint) return 'mismatch';
  if (kept.state === 'done') return 'replay';
  if (kept.state === 'running' && kept.leaseUntil > now) return 'running';
  return 'take-over';
}
