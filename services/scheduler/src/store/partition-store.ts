import { documentSchema, upsertOne } from '@rs/store';
import { type Connection, type Model } from 'mongoose';

interface CursorDocument {
  /** `<collection>:<partition>` */
  _id: string;
  /** The last second swept. */
  second: number;
}

/**
 * Each partition's sweep position (docs/decisions/0011), kept so that its next owner, after a
 * restart or a take-over, goes on from there (catching up whatever fell due meanwhile). Which
 * replica owns a partition follows from the live memberships (`ReplicaRegistry`).
 */
export class PartitionStore {
  private readonly cursors: Model<CursorDocument>;

  constructor(db: Connection) {
    this.cursors = db.model<CursorDocument>(
      'SweepCursor',
      documentSchema<CursorDocument>('sweep_cursors', { second: 'number' }),
    );
  }

  async cursor(collection: string, partition: number): Promise<number | null> {
    const found = await this.cursors.findOne({ _id: `${collection}:${partition}` }).lean<CursorDocument>();
    return found?.second ?? null;
  }

  async saveCursor(collection: string, partition: number, second: number): Promise<void> {
    await upsertOne(this.cursors.collection, { _id: `${collection}:${partition}` } as never, { $set: { second } });
  }
}
