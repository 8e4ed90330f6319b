import { documentLock } from '@rs/messaging';
import { Schema, type Connection, type Model } from 'mongoose';

/**
 * Something the scheduler must act on at `dueAt`: a right to expire, a subscription to
 * renew or expire. Kept from the owning service's events, ordered by their `sequence`.
 */
export interface DueItem<Data> {
  id: string;
  sequence: number;
  /** null: nothing is due (any more). */
  dueAt: Date | null;
  data: Data;
  commandSentAt: Date | null;
}

interface DueDocument {
  _id: string;
  sequence: number;
  dueAt: Date | null;
  data: unknown;
  commandSentAt: Date | null;
}

/** One collection of due items in the scheduler's own database (DESIGN.md 1). */
export class DueStore<Data> {
  private readonly model: Model<DueDocument>;

  constructor(
    db: Connection,
    private readonly collection: string,
  ) {
    const schema = new Schema<DueDocument>(
      {
        _id: { type: String, required: true },
        sequence: { type: Number, required: true },
        dueAt: { type: Date, default: null },
        data: { type: Schema.Types.Mixed, required: true },
        commandSentAt: { type: Date, default: null },
      },
      { collection, versionKey: false },
    );
    schema.index({ dueAt: 1 }, { name: 'due' });
    this.model = db.model<DueDocument>(collection, schema);
  }

  async ensureIndexes(): Promise<void> {
    await this.model.createIndexes();
  }

  /** Applies the state as of `sequence`; older or repeated events change nothing. A new state is due anew. */
  async record(item: Omit<DueItem<Data>, 'commandSentAt'>): Promise<void> {
    await documentLock.run(this.collection, item.id, async () => {
      const fields = { sequence: item.sequence, dueAt: item.dueAt, data: item.data, commandSentAt: null };
      const result = await this.model.collection.updateOne(
        { _id: item.id, sequence: { $lt: item.sequence } } as never,
        { $set: fields },
      );
      if (result.matchedCount === 1) return;
      try {
        await this.model.collection.insertOne({ _id: item.id, ...fields } as never);
      } catch (error) {
        if ((error as { code?: number }).code !== 11000) throw error; // exists with a newer sequence
      }
    });
  }

  async forget(id: string): Promise<void> {
    await documentLock.run(this.collection, id, () => this.model.deleteOne({ _id: id }));
  }

  /**
   * Items due by `now`, not sent since `resendBefore`. Not sorted: every due item is sent
   * within a few ticks anyway (a claimed item stops matching), MongoDB walks the `due` index
   * in order for this range regardless, and a sort makes FerretDB read every item each tick
   * instead of stopping after `limit`.
   */
  async due(now: Date, resendBefore: Date, limit: number): Promise<DueItem<Data>[]> {
    const docs = await this.model
      .find({
        dueAt: { $ne: null, $lte: now },
        $or: [{ commandSentAt: null }, { commandSentAt: { $lt: resendBefore } }],
      })
      .limit(limit)
      .lean<DueDocument[]>();
    return docs.map(({ _id, ...rest }) => ({ id: _id, ...rest, data: rest.data as Data }));
  }

  /** Only one of several scheduler replicas moves `commandSentAt` from what it read. */
  async claim(item: DueItem<Data>, now: Date): Promise<boolean> {
    return documentLock.run(this.collection, item.id, async () => {
      const result = await this.model.collection.updateOne(
        { _id: item.id, sequence: item.sequence, commandSentAt: item.commandSentAt } as never,
        { $set: { commandSentAt: now } },
      );
      return result.modifiedCount === 1;
    });
  }

  /** The command could not be published: due again at once. */
  async release(item: DueItem<Data>): Promise<void> {
    await documentLock.run(this.collection, item.id, () =>
      this.model.collection.updateOne({ _id: item.id, sequence: item.sequence } as never, {
        $set: { commandSentAt: null },
      }),
    );
  }
}
