import { Schema, type Connection, type Model } from 'mongoose';
import { TtlCache } from '../auth/ttl-cache';

/** A user known to the platform (DESIGN.md 3 "Users"), identified by its connectId. */
export interface KnownUser {
  connectId: string;
  createdAt: Date;
}

/**
 * Answers whether a connectId exists. The seam for an identity provider: an adapter that
 * asks the provider over HTTP, or one fed by its events on the broker, implements this
 * interface in place of (or in front of) the gateway's own directory.
 */
export interface UserDirectory {
  find(connectId: string): Promise<KnownUser | null>;
}

interface UserDocument {
  _id: string;
  createdAt: Date;
}

const userSchema = new Schema<UserDocument>(
  { _id: { type: String, required: true }, createdAt: { type: Date, required: true } },
  { collection: 'users', versionKey: false },
);

const POSITIVE_TTL_MS = 5_000;
const NEGATIVE_TTL_MS = 1_000;

/**
 * The gateway's user directory in its `identity` database, with a short cache: a user
 * registered or removed through another gateway replica is seen within seconds.
 */
export class UserStore implements UserDirectory {
  private readonly model: Model<UserDocument>;
  private readonly cache = new TtlCache<string, KnownUser | null>();

  constructor(db: Connection) {
    this.model = db.model<UserDocument>('User', userSchema);
  }

  async find(connectId: string): Promise<KnownUser | null> {
    const cached = this.cache.get(connectId);
    if (cached !== undefined) return cached;
    const doc = await this.model.findById(connectId).lean<UserDocument>();
    const user = doc ? { connectId: doc._id, createdAt: doc.createdAt } : null;
    this.cache.set(connectId, user, user ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
    return user;
  }

  /** Registers the user; true when it was new. */
  async register(connectId: string, now = new Date()): Promise<boolean> {
    const result = await this.model.collection.updateOne(
      { _id: connectId } as never,
      { $setOnInsert: { createdAt: now } },
      { upsert: true },
    );
    this.cache.deleteWhere((key) => key === connectId);
    return result.upsertedCount === 1;
  }

  async unregister(connectId: string): Promise<boolean> {
    const removed = (await this.model.deleteOne({ _id: connectId })).deletedCount === 1;
    this.cache.deleteWhere((key) => key === connectId);
    return removed;
  }
}
