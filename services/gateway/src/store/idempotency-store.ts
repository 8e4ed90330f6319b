import { randomBytes } from 'node:crypto';
import {
  BY_ID,
  compareAndSetWrite,
  declareIndexes,
  documentSchema,
  isDuplicateKey,
  isLostCompareAndSet,
  serverLimits,
  type CollectionIndexes,
} from '@rs/store';
import type { Clock } from '@rs/time';
import type { Connection, Model } from 'mongoose';
import { onRetry, type KeptRequest } from '../domain/idempotency';

/** A response as it is kept and replayed. */
export interface KeptResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface IdempotencyDocument extends KeptRequest {
  _id: string;
  /** Drawn when the key is claimed afresh; the resource id of a create derives from it. */
  nonce: string;
  response: KeptResponse | null;
  /**
   * Moved on by every write, so that a take-over is a compare-and-set on what it read, which
   * FerretDB's guard checks across replicas (docs/decisions/0046).
   */
  generation: number;
}

const schema = documentSchema<IdempotencyDocument>('idempotency_keys', {
  fingerprint: 'string',
  nonce: 'string',
  state: 'string',
  leaseUntil: 'date',
  expiresAt: 'date',
  response: 'json?',
  generation: 'number',
});

/** Keys are claimed and replayed by `_id`; the purge of expired ones is a range. */
export const IDEMPOTENCY_INDEXES: CollectionIndexes = {
  collection: 'idempotency_keys',
  queries: [
    BY_ID,
    {
      query: 'purge of expired keys (every minute)',
      mongodb: [{ key: { expiresAt: 1 }, name: 'by_expiry' }],
      ferretdb: [],
      scan: 'once a minute, keys live a day',
    },
  ],
};

export type Begun =
  | { kind: 'run'; nonce: string }
  | { kind: 'replay'; response: KeptResponse }
  | { kind: 'mismatch' }
  | { kind: 'running' };

export interface KeyTimes {
  /** How long an attempt owns the key before a retry may take over (it crashed or hung). */
  leaseMs: number;
  /** IDEMPOTENCY_TTL_S: how long the key stays bound to its request. */
  ttlS: number;
}

/**
 * Idempotency keys in the gateway's own database (docs/api.md), so that they hold across
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
   * Claims `key` for a request with `fingerprint`: `run` with the key's nonce when this
   * request may run (a new or forgotten key, or one whose last attempt was released or
   * crashed), else what it gets instead.
   */
  async begin(clientId: string, key: string, fingerprint: string, times: KeyTimes): Promise<Begun> {
    const _id = idOf(clientId, key);
    const now = this.clock().getTime();
    const leaseUntil = new Date(now + times.leaseMs);
    const fresh = () => ({
      fingerprint,
      nonce: randomBytes(16).toString('base64url'),
      state: 'running' as const,
      generation: 1,
      leaseUntil,
      expiresAt: new Date(now + times.ttlS * 1000),
      response: null,
    });
    // A read first: a retry (the case worth being fast) costs one lookup by id.
    let kept = await this.model.findById(_id).lean<IdempotencyDocument>();
    if (!kept) {
      const claim = fresh();
      try {
        await this.model.collection.insertOne({ _id, ...claim } as never);
        return { kind: 'run', nonce: claim.nonce };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      kept = await this.model.findById(_id).lean<IdempotencyDocument>();
      if (!kept) return { kind: 'running' }; // claimed and forgotten meanwhile: the client retries
    }
    const next = onRetry(kept, fingerprint, new Date(now));
    if (next === 'replay') return { kind: 'replay', response: kept.response! };
    if (next === 'mismatch') return { kind: 'mismatch' };
    if (next === 'running') return { kind: 'running' };
    // A take-over runs as the same attempt (same nonce: a create finds what an earlier one
    // stored); a forgotten key starts afresh. Compare-and-set on what was read: of two
    // retries, one wins and the other waits.
    const claim = next === 'new' ? fresh() : { state: 'running' as const, leaseUntil, nonce: kept.nonce };
    return (await this.takeOver(kept, claim)) ? { kind: 'run', nonce: claim.nonce } : { kind: 'running' };
  }

  /**
   * Compare-and-set of a key on the state and generation it was read at. On FerretDB, which
   * checks a filter on the document it read, the stamp lets its guard refuse the write of a
   * replica that read before another's landed (docs/decisions/0046).
   */
  private async takeOver(kept: IdempotencyDocument, claim: object): Promise<boolean> {
    const stamped = !(await serverLimits(this.model.db.db!)).usesDriverIndexes;
    const { _id: id, generation } = kept;
    const { filter, update } = compareAndSetWrite(
      { id, generation, set: { ...claim, generation: generation + 1 }, outbox: [] },
      { state: kept.state, leaseUntil: kept.leaseUntil },
      stamped,
    );
    try {
      const result = await this.model.collection.updateOne(filter, update);
      return result.modifiedCount === 1;
    } catch (error) {
      if (isLostCompareAndSet(error)) return false;
      throw error;
    }
  }

  /**
   * The write that ends an attempt, if it still owns the key: a new generation, so that a
   * take-over read before it loses. Refused by FerretDB's guard when a take-over landed after
   * this write read the key: the key is the new attempt's then.
   */
  private async settle(clientId: string, key: string, fingerprint: string, set: object): Promise<void> {
    try {
      await this.model.collection.updateOne({ _id: idOf(clientId, key), fingerprint, state: 'running' } as never, {
        $set: set,
        $inc: { generation: 1 },
      });
    } catch (error) {
      if (!isLostCompareAndSet(error)) throw error;
    }
  }

  /** Keeps the response of the request that ran, for `ttlS`. */
  async complete(
    clientId: string,
    key: string,
    fingerprint: string,
    response: KeptResponse,
    ttlS: number,
  ): Promise<void> {
    const expiresAt = new Date(this.clock().getTime() + ttlS * 1000);
    await this.settle(clientId, key, fingerprint, { state: 'done', response, expiresAt });
  }

  /**
   * The attempt got no answer worth keeping (a 5xx, a 429, none): the next one runs again.
   * The key stays bound to its request and nonce: the effect may have happened after all.
   */
  async release(clientId: string, key: string, fingerprint: string): Promise<void> {
    await this.settle(clientId, key, fingerprint, { state: 'released' });
  }

  /**
   * A migration step (`services/gateway/dist/migrate.js`).
   * @public (called by `runtime.migrated`)
   */
  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.model.db.db!, IDEMPOTENCY_INDEXES);
  }

  /** Deletes what has expired (the periodic clean-up). */
  async purge(): Promise<void> {
    await this.model.deleteMany({ expiresAt: { $lt: this.clock() } });
  }
}

const idOf = (clientId: string, key: string) => `${clientId}\n${key}`;
