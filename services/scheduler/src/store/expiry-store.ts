import { documentLock } from '@rs/messaging';
import { Schema, type Connection, type Model } from 'mongoose';

/** What the scheduler knows of a right: enough to know when it must expire. */
export interface RightExpiry {
  rightId: string;
  connectId: string;
  end: Date;
  state: string;
  sequence: number;
  commandSentAt: Date | null;
}

interface RightExpiryDocument {
  _id: string;
  connectId: string;
  end: Date;
  state: string;
  sequence: number;
  commandSentAt?: Date | null;
}

const schema = new Schema<RightExpiryDocument>(
  {
    _id: { type: String, required: true },
    connectId: { type: String, required: true },
    end: { type: Date, required: true },
    state: { type: String, required: true },
    sequence: { type: Number, required: true },
    commandSentAt: { type: Date, default: null },
  },
  { collection: 'right_expiries', versionKey: false },
);
schema.index({ state: 1, end: 1 }, { name: 'due' });

const EXPIRABLE = ['ACTIVE', 'SUSPENDED'];

/**
 * The scheduler's projection of rights (its own database, DESIGN.md 1), fed by
 * `rights.events`: per right its end and state, ordered by the events' `sequence`.
 */
export class ExpiryStore {
  private readonly model: Model<RightExpiryDocument>;

  constructor(db: Connection) {
    this.model = db.model<RightExpiryDocument>('RightExpiry', schema);
  }

  async ensureIndexes(): Promise<void> {
    await this.model.createIndexes();
  }

  /** Applies a right's state as of `sequence`; older or repeated events change nothing. */
  async record(expiry: Omit<RightExpiry, 'commandSentAt'>): Promise<void> {
    await documentLock.run('right_expiries', expiry.rightId, async () => {
      const { rightId, ...fields } = expiry;
      const result = await this.model.collection.updateOne(
        { _id: rightId, sequence: { $lt: expiry.sequence } } as never,
        { $set: fields },
      );
      if (result.matchedCount === 1) return;
      try {
        await this.model.collection.insertOne({ _id: rightId, ...fields, commandSentAt: null } as never);
      } catch (error) {
        if ((error as { code?: number }).code !== 11000) throw error; // exists with a newer sequence
      }
    });
  }

  async forget(rightId: string): Promise<void> {
    await documentLock.run('right_expiries', rightId, () => this.model.deleteOne({ _id: rightId }));
  }

  /** Rights whose interval ended, not asked to expire since `resendBefore`. */
  async due(now: Date, resendBefore: Date, limit: number): Promise<RightExpiry[]> {
    const docs = await this.model
      .find({
        state: { $in: EXPIRABLE },
        end: { $lte: now },
        $or: [{ commandSentAt: null }, { commandSentAt: { $lt: resendBefore } }],
      })
      .sort({ end: 1 })
      .limit(limit)
      .lean<RightExpiryDocument[]>();
    return docs.map(({ _id, commandSentAt, ...rest }) => ({
      rightId: _id,
      commandSentAt: commandSentAt ?? null,
      ...rest,
    }));
  }

  /**
   * Claims a due right for this scheduler: only one of several replicas that read it
   * succeeds in moving `commandSentAt` from what it read.
   */
  async claim(expiry: RightExpiry, now: Date): Promise<boolean> {
    return documentLock.run('right_expiries', expiry.rightId, async () => {
      const result = await this.model.collection.updateOne(
        { _id: expiry.rightId, sequence: expiry.sequence, commandSentAt: expiry.commandSentAt } as never,
        { $set: { commandSentAt: now } },
      );
      return result.modifiedCount === 1;
    });
  }

  /** The command could not be published: make the right due again at once. */
  async release(expiry: RightExpiry): Promise<void> {
    await documentLock.run('right_expiries', expiry.rightId, () =>
      this.model.collection.updateOne({ _id: expiry.rightId } as never, { $set: { commandSentAt: null } }),
    );
  }
}
