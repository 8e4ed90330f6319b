import { DomainError } from '@rs/contracts';
import { fingerprintOf, isValidIdempotencyKey, keepsResponse, resourceIdOf } from '../domain/idempotency';
import type { Begun, IdempotencyStore, KeptResponse } from '../store/idempotency-store';

/** A request sent with an `Idempotency-Key`, by the principal whose keys it spends. */
export interface KeyedRequest {
  /** The budget's key: a client's, or a (client, user) pair's, so that keys never mix. */
  owner: string;
  key: string;
  method: string;
  url: string;
  body: Buffer;
}

/** An attempt that runs: the id its creation gets, and what to do with its answer. */
export interface Attempt {
  resourceId: string;
  /** Keeps the answer for replays, or lets a retry run again (no answer, or one not kept). */
  finish(answer: KeptResponse | null): Promise<void>;
}

export type Started = Exclude<Begun, { kind: 'run' }> | { kind: 'run'; attempt: Attempt };

/**
 * docs/api.md "Idempotency-Key": the first request with a key runs and its answer is kept; the
 * same request again gets that answer; another request with the key is a mismatch; a retry
 * while the first still runs is told so. A create gets the id derived from the key's owner and
 * the key, so a retry after a crash anywhere finds the resource of the first attempt instead of
 * making a second one. The HTTP layer forwards the attempt and says how each outcome answers.
 */
export class Idempotency {
  constructor(
    private readonly options: {
      store: Pick<IdempotencyStore, 'begin' | 'complete' | 'release'>;
      /** IDEMPOTENCY_TTL_S: how long a response is kept. */
      ttlS: number;
      /** How long a first attempt owns its key before a retry may take over (it crashed or hung). */
      leaseMs: number;
    },
  ) {}

  async start(request: KeyedRequest): Promise<Started> {
    const { owner, key } = request;
    if (!isValidIdempotencyKey(key))
      throw DomainError.invalid('Idempotency-Key: must be 1 to 255 visible ASCII characters');
    const { store, ttlS } = this.options;
    const fingerprint = fingerprintOf(request.method, request.url, request.body);
    const begun = await store.begin(owner, key, fingerprint, this.options);
    if (begun.kind !== 'run') return begun;
    return {
      kind: 'run',
      attempt: {
        resourceId: resourceIdOf(owner, key, begun.nonce),
        finish: (answer) =>
          answer && keepsResponse(answer.status)
            ? store.complete(owner, key, fingerprint, answer, ttlS)
            : store.release(owner, key, fingerprint),
      },
    };
  }
}
