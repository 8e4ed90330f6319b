import { z } from 'zod';

/** docs/api.md "Idempotency-Key": 1–255 visible ASCII characters. */
export const IdempotencyKey = z.string().regex(/^[\x21-\x7e]{1,255}$/);

/**
 * docs/api.md: the requests that may carry an Idempotency-Key, every POST and DELETE under
 * /id/users/… that a service answers (the gateway forwards them; its own user operations are
 * idempotent by themselves).
 */
export const takesIdempotencyKey = (method: string, path: string): boolean =>
  (method === 'POST' || method === 'DELETE') && path.startsWith('/id/users/');
