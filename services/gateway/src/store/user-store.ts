import { systemClock, type Clock } from '@rs/time';
import { BY_ID, documentSchema, upsertOne, type CollectionIndexes } from '@rs/store';
import { type Connection, type Model } from 'mongoose';
import { directoryLookups } from '../auth/metrics';
import { RefreshingCache } from '../auth/refreshing-cache';

/** A user known to the platform (docs/api.md "Users"), identified by its connectId. */
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

const userSchema = documentSchema<UserDocument>('users', { createdAt: 'date' });

/** A user is looked up by `_id` on every user route (behind a cache); admins page the directory in `_id` order. */
export const USER_INDEXES: CollectionIndexes = {
  collection: 'users',
  queries: [
    BY_ID,
    {
      query: "a page of the directory in connectId order (admins' list)",
      mongodb: [],
      ferretdb: [],
      scan: 'admins only, one page at a time',
    },
  ],
};

/**
 * The gateway's user directory in its `identity` database, behind a cache refreshed with a
 * single flight per user: a user registered or removed through another gateway
 * replica is seen within `cacheTtlMs` plus one lookup.
 */
export class UserStore implements UserDirectory {
  private readonly model: Model<UserDocument>;
  private readonly cache: RefreshingCache<string, KnownUser | null>;

  constructor(
    db: Connection,
    cacheTtlMs: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.model = db.model<UserDocument>('User', userSchema);
    this.cache = new RefreshingCache({
      load: async (connectId) => {
        directoryLookups.inc({ directory: 'users' });
        const doc = await this.model.findById(connectId).lean<UserDocument>();
        return doc ? { connectId: doc._id, createdAt: doc.createdAt } : null;
      },
      freshMs: cacheTtlMs,
      staleMs: cacheTtlMs,
      max: 100_000,
      clock,
    });
  }

  find(connectId: string): Promise<KnownUser | null> {
    return this.cache.get(connectId);
  }

  /** Registers the user; true when it was new. */
  async register(connectId: string): Promise<boolean> {
    const now = this.clock();
    const result = await upsertOne(this.model.collection, { _id: connectId } as never, {
      $setOnInsert: { createdAt: now },
    });
    this.cache.delete(connectId);
    return result.upsertedCount === 1;
  }

  /** A page of the directory in connectId order, after `after` (admins' list). */
  async page(limit: number, after: string | undefined): Promise<KnownUser[]> {
    const docs = await this.model
      .find(after === undefined ? {} : { _id: { $gt: after } })
      .sort({ _id: 1 })
      .limit(limit)
      .lean<UserDocument[]>();
    return docs.map((doc) => ({ connectId: doc._id, createdAt: doc.createdAt }));
  }

  async unregister(connectId: string): Promise<boolean> {
    const removed = (await this.model.deleteOne({ _id: connectId })).deletedCount === 1;
    this.cache.delete(connectId);
    return removed;
  }
}
