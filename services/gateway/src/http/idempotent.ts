import { AppError, RESOURCE_ID_HEADER } from '@rs/http';
import type { Request, Response } from 'express';
import type { Idempotency } from '../app/idempotency';
import type { KeptResponse } from '../store/idempotency-store';
import type { ForwardedResponse, Forwarder, Outgoing } from './forward';

/** What a replay restores besides the status and the body. */
const KEPT_HEADERS = ['content-type', 'etag', 'location', 'link'];

/**
 * docs/api.md "Idempotency-Key" over HTTP: the use case decides; a replay answers as the first
 * time did (`Idempotent-Replayed: true`), another request with the key is 422, a retry while the
 * first still runs is 409; an attempt is forwarded with its resource id, and its answer kept.
 */
export function idempotentForwarder(idempotency: Idempotency, forwarder: Forwarder) {
  return async (call: { req: Request; res: Response; upstream: URL; outgoing: Outgoing; key: string }) => {
    const { req, res, upstream, outgoing, key } = call;
    const started = await idempotency.start({
      owner: outgoing.owner.key,
      key,
      method: req.method,
      url: req.originalUrl,
      body: outgoing.body,
    });
    switch (started.kind) {
      case 'replay':
        return replay(res, started.response);
      case 'mismatch':
        throw new AppError(422, 'this Idempotency-Key was used for another request', {}, 'idempotency_key_reused');
      case 'running':
        throw new AppError(409, 'a request with this Idempotency-Key is still running', { 'Retry-After': '1' });
      case 'run': {
        const { attempt } = started;
        const answer = await forwarder.forward(req, res, upstream, outgoing, {
          headers: { [RESOURCE_ID_HEADER]: attempt.resourceId },
          keep: (answer: ForwardedResponse) => attempt.finish(kept(answer)),
        });
        // No answer (the service is unreachable, or timed out): a retry runs again, as the same attempt.
        if (!answer) await attempt.finish(null);
      }
    }
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
