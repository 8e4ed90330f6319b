import { systemClock, type Clock } from '@rs/time';
import { BY_ID, declareIndexes, documentSchema, upsertOne, type CollectionIndexes } from '@rs/store';
import type { Logger } from '@rs/logging';
import { repeat, type Repeating } from '@rs/time';
import { type Connection, type Model } from 'mongoose';

interface RevokedTokenDocument {
  _id: string;
  /** When it was last revoked: every replica reloads what was revoked since it last looked. */
  revokedAt: Date;
  /** After this instant the token would be refused as expired anyway; the entry can go. */
  expiresAt: Date;
}

const revokedSchema = documentSchema<RevokedTokenDocument>('revoked_tokens', { revokedAt: 'date', expiresAt: 'date' });

/** A revocation is written by `_id`; every replica reads two ranges every few seconds: the recent revocations, the expired ones. */
export const REVOCATION_INDEXES: CollectionIndexes = {
  collection: 'revoked_tokens',
  queries: [
    BY_ID,
    {
      query: 'refresh of new revocations (every few seconds), purge of expired ones',
      mongodb: [
        { key: { revokedAt: 1 }, name: 'by_revocation' },
        { key: { expiresAt: 1 }, name: 'by_expiry' },
      ],
      ferretdb: [],
      scan: 'as few documents as tokens revoked and not yet expired',
    },
  ],
};

export interface RevocationStoreOptions {
  logger: Logger;
  /**
   * How long a revocation lasts at least, whatever end it is given: the longest lifetime a
   * token may have (JWT_MAX_TOKEN_LIFETIME_S) and the clock tolerance, so that no token it
   * names can outlive it.
   */
  minimumMs: number;
  refreshMs?: number;
  clock?: Clock;
}

/**
 * Revoked token ids (`jti`), docs/architecture.md. Every gateway replica keeps them in memory and
 * reloads the recent ones every `refreshMs`, so a revocation through one replica holds on
 * all of them within seconds, without a database read per request.
 */
export class RevocationStore {
  private readonly model: Model<RevokedTokenDocument>;
  private readonly revoked = new Map<string, number>();
  private loadedUpTo = new Date(0);
  private refreshing: Repeating | undefined;

  private readonly logger: Logger;
  private readonly minimumMs: number;
  private readonly refreshMs: number;
  private readonly clock: Clock;

  constructor(db: Connection, options: RevocationStoreOptions) {
    this.model = db.model<RevokedTokenDocument>('RevokedToken', revokedSchema);
    this.logger = options.logger;
    this.minimumMs = options.minimumMs;
    this.refreshMs = options.refreshMs ?? 2_000;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * A migration step (`services/gateway/dist/migrate.js`).
   * @public (called by `runtime.migrated`)
   */
  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.model.db.db!, REVOCATION_INDEXES);
  }

  async start(): Promise<void> {
    await this.refresh();
    this.refreshing = repeat(() => this.refresh(), {
      everyMs: this.refreshMs,
      immediately: false,
      onError: (error) => this.logger.warn({ err: error }, 'cannot refresh revoked tokens'),
    });
  }

  async stop(): Promise<void> {
    await this.refreshing?.stop();
  }

  isRevoked(jti: string): boolean {
    const until = this.revoked.get(jti);
    return until !== undefined && until > this.clock().getTime();
  }

  /**
   * Revokes a token id until `expiresAt` or the minimum, whichever is later; a revocation
   * is never shortened, only extended, and every revocation reaches every replica. True when
   * the token id was not revoked before.
   */
  async revoke(jti: string, expiresAt: Date | undefined): Promise<boolean> {
    const now = this.clock();
    const until = new Date(Math.max(now.getTime() + this.minimumMs, expiresAt?.getTime() ?? 0));
    const result = await upsertOne(this.model.collection, { _id: jti } as never, {
      $max: { expiresAt: until },
      $set: { revokedAt: now },
    });
    this.revoked.set(jti, Math.max(until.getTime(), this.revoked.get(jti) ?? 0));
    return result.upsertedCount === 1;
  }

  private async refresh(): Promise<void> {
    // Overlap by a few seconds: clocks of the replicas that wrote may differ slightly.
    const since = new Date(this.loadedUpTo.getTime() - 5_000);
    const now = this.clock();
    const docs = await this.model.find({ revokedAt: { $gte: since } }).lean<RevokedTokenDocument[]>();
    for (const doc of docs)
      this.revoked.set(doc._id, Math.max(doc.expiresAt.getTime(), this.revoked.get(doc._id) ?? 0));
    for (const [jti, until] of this.revoked) if (until <= now.getTime()) this.revoked.delete(jti);
    this.loadedUpTo = now;
    await this.model.deleteMany({ expiresAt: { $lt: now } });
  }
}
