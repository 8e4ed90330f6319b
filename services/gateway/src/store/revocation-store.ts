import { systemClock, type Clock } from '@rs/time';
import { declareIndexes, documentSchema, indexesOf } from '@rs/store';
import type { Logger } from '@rs/logging';
import { repeat, type Repeating } from '@rs/time';
import { type Connection, type Model } from 'mongoose';

interface RevokedTokenDocument {
  _id: string;
  revokedAt: Date;
  /** After this instant the token would be refused as expired anyway; the entry can go. */
  expiresAt: Date;
}

const revokedSchema = documentSchema<RevokedTokenDocument>('revoked_tokens', { revokedAt: 'date', expiresAt: 'date' });
// The two ranges every replica reads every few seconds: the recent revocations, the expired ones.
revokedSchema.index({ revokedAt: 1 }, { name: 'by_revocation' });
revokedSchema.index({ expiresAt: 1 }, { name: 'by_expiry' });

/** How long a revocation is kept when the caller does not say when the token expires. */
export const DEFAULT_REVOCATION_RETENTION_MS = 30 * 24 * 3600 * 1000;

/**
 * Revoked token ids (`jti`), DESIGN.md 6. Every gateway replica keeps them in memory and
 * reloads the recent ones every `refreshMs`, so a revocation through one replica holds on
 * all of them within seconds, without a database read per request.
 */
export class RevocationStore {
  private readonly model: Model<RevokedTokenDocument>;
  private readonly revoked = new Map<string, number>();
  private loadedUpTo = new Date(0);
  private refreshing: Repeating | undefined;

  constructor(
    db: Connection,
    private readonly logger: Logger,
    private readonly refreshMs = 2_000,
    private readonly clock: Clock = systemClock,
  ) {
    this.model = db.model<RevokedTokenDocument>('RevokedToken', revokedSchema);
  }

  /** A migration step (`services/gateway/dist/migrate.js`). */
  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.model.db.db!, this.model.collection.collectionName, indexesOf(this.model.schema));
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

  /** True when the token id was not revoked before. */
  async revoke(jti: string, expiresAt: Date | undefined): Promise<boolean> {
    const now = this.clock();
    const until = expiresAt ?? new Date(now.getTime() + DEFAULT_REVOCATION_RETENTION_MS);
    const result = await this.model.collection.updateOne(
      { _id: jti } as never,
      { $set: { expiresAt: until }, $setOnInsert: { revokedAt: now } },
      { upsert: true },
    );
    this.revoked.set(jti, until.getTime());
    return result.upsertedCount === 1;
  }

  private async refresh(): Promise<void> {
    // Overlap by a few seconds: clocks of the replicas that wrote may differ slightly.
    const since = new Date(this.loadedUpTo.getTime() - 5_000);
    const now = this.clock();
    const docs = await this.model.find({ revokedAt: { $gte: since } }).lean<RevokedTokenDocument[]>();
    for (const doc of docs) this.revoked.set(doc._id, doc.expiresAt.getTime());
    for (const [jti, until] of this.revoked) if (until <= now.getTime()) this.revoked.delete(jti);
    this.loadedUpTo = now;
    await this.model.deleteMany({ expiresAt: { $lt: now } });
  }
}
