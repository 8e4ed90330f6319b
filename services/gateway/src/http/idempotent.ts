import { AppError, badRequest, RESOURCE_ID_HEADER } from '@rs/http';
import type { Request, Response } from 'express';
import { fingerprintOf, isValidIdempotencyKey, keepsResponse, resourceIdOf } from '../domain/idempotency';
import type { IdempotencyStore, KeptResponse } from '../store/idempotency-store';
import type { ForwardedResponse, Forwarder, Outgoing } from './forward';

export interface IdempotencyOptions {
  store: IdempotencyStore;
  forwarder: Forwarder;
  /** IDEMPOTENCY_TTL_S: how long a response is kept. */
  ttlS: number;
  /** How long a first attempt owns its key before a retry may take over (it crashed or hung). */
  leaseMs: number;
}

/** What a replay restores besides the status and the body. */
const KEPT_HEADERS = ['content-type', 'etag', 'location', 'link'];

/**
 * docs/api.md "Idempotency-Key": the first request with a key runs and its answer is kept;
 * the same request again gets that answer (`Idempotent-Replayed: true`); another request
 * with the key gets 422; a retry while the first still runs gets 409. A create gets the id
 * derived from the key's owner and the key, so a retry after a crash anywhere finds the
 * resource of the first attempt instead of making a second one.
 */
export function idempotentForwarder(options: IdempotencyOptions) {
  return async (call: { req: Request; res: Response; upstream: URL; outgoing: Outgoing; key: string }) => {
    const { req, res, upstream, outgoing, key } = call;
    if (!isValidIdempotencyKey(key)) throw badRequest('Idempotency-Key: must be 1 to 255 visible ASCII characters');
    const { body } = outgoing;
    const owner = outgoing.owner.key; // a client's, or a (client, user) pair's: keys never mix
    const fingerprint = fingerprintOf(req.method, req.originalUrl, body);
    const begun = await options.store.begin(owner, key, fingerprint, options);
    if (begun.kind === 'replay') return replay(res, begun.response);
    if (begun.kind === 'mismatch')
      throw new AppError(422, 'this Idempotency-Key was used for another request', {}, 'idempotency_key_reused');
    if (begun.kind === 'running')
      throw new AppError(409, 'a request with this Idempotency-Key is still running', { 'Retry-After': '1' });
    const answer = await options.forwarder.forward(req, res, upstream, outgoing, {
      headers: { [RESOURCE_ID_HEADER]: resourceIdOf(owner, key, begun.nonce) },
      keep: (answer: ForwardedResponse) =>
        keepsResponse(answer.status)
          ? options.store.complete(owner, key, fingerprint, kept(answer), options.ttlS)
          : options.store.release(owner, key, fingerprint),
    });
    // No answer (the service is unreachable, or timed out): a retry runs again, as the same attempt.
    if (!answer) await options.store.release(owner, key, fingerprint);
  };
}

function kept(answer: ForwardedResponse): KeptResponse {
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = answer.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return { status: answer.status, headers, body: answer.body.toString('utf8') };
}

function replay(res: Response, response: KeptResponse): void {
  res.status(response.status).set(response.headers).set('Idempotent-Replayed', 'true');
  if (response.body.length > 0) res.send(response.body);
  else res.end();
}
