import { documentSchema, isDuplicateKey } from '@rs/store';
import type { Clock } from '@rs/time';
import type { Connection, Model } from 'mongoose';
import { onRetry, type KeptRequest, type OnRetry } from '../domain/idempotency';

/** A response as it is kept and replayed. */
export interface KeptResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface IdempotencyDocument extends KeptRequest {
  _id: string;
  response: KeptResponse | null;
}

const schema = documentSchema<IdempotencyDocument>('idempotency_keys', {
  fingerprint: 'string',
  state: 'string',
  leaseUntil: 'date',
  expiresAt: 'date',
  response: 'json?',
});

export type Begun =
  { kind: 'run' } | { kind: 'replay'; response: KeptResponse } | { kind: Exclude<OnRetry, 'replay' | 'take-over'> };

/**
 * Idempotency keys in the gateway's own database (DESIGN.md 8), so that they hold across
 * gateway replicas and restarts. A key belongs to one API client.
 */
export class IdempotencyStore {
  private readonly model: Model<IdempotencyDocument>;

  constructor(
    db: Connection,
    private readonly clock: Clock,
  ) {
    this.model = db.model<IdempotencyDocument>('IdempotencyKey', schema);
  }

  /**
   * Claims `key` for a request with `fingerprint`: `run` when this request may run (a new key,
   * or one whose first attempt has expired or crashed), else what it gets instead.
   */
  async begin(clientId: string, key: string, fingerprint: string, leaseMs: number): Promise<Begun> {
    const _id = idOf(clientId, key);
    const now = this.clock();
    const running = {
      fingerprint,
      state: 'running' as const,
      leaseUntil: new Date(now.getTime() + leaseMs),
      expiresAt: new Date(now.getTime() + leaseMs),
      response: null,
    };
    // A read first: a retry (the case worth being fast, issue 11) costs one lookup by id.
    let kept = await this.model.findById(_id).lean<IdempotencyDocument>();
    if (!kept) {
      try {
        await this.model.collection.insertOne({ _id, ...running } as never);
        return { kind: 'run' };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      kept = await this.model.findById(_id).lean<IdempotencyDocument>();
      if (!kept) return { kind: 'running' }; // claimed and released meanwhile: the client retries
    }
    const next = onRetry(kept, fingerprint, now);
    if (next === 'replay') return { kind: 'replay', response: kept.response! };
    if (next !== 'take-over') return { kind: next };
    // Compare-and-set on what was read: of two retries taking over, one wins; the other waits.
    const taken = await this.model.collection.updateOne(
      { _id, state: kept.state, leaseUntil: kept.leaseUntil } as never,
      { $set: running },
    );
    return taken.modifiedCount === 1 ? { kind: 'run' } : { kind: 'running' };
  }

  /** Keeps the response of the request that ran, for `ttlS`. */
  async complete(
    clientId: string,
    key: string,
    fingerprint: string,
    response: KeptResponse,
    ttlS: number,
  ): Promise<void> {
    await this.model.collection.updateOne({ _id: idOf(clientId, key), fingerprint, state: 'running' } as never, {
      $set: { state: 'done', response, expiresAt: new Date(this.clock().getTime() + ttlS * 1000) },
    });
  }

  /** Forgets a key whose request should run again when retried (a 5xx, a 429, no answer). */
  async release(clientId: string, key: string, fingerprint: string): Promise<void> {
    await this.model.collection.deleteOne({ _id: idOf(clientId, key), fingerprint, state: 'running' } as never);
  }

  /** Deletes what has expired (the periodic clean-up). */
  async purge(): Promise<void> {
    await this.model.deleteMany({ expiresAt: { $lt: this.clock() } });
  }
}

const idOf = (clientId: string, key: string) => `${clientId}\n${key}`;
