import { documentSchema } from '@rs/store';
import { type Connection, type Model } from 'mongoose';

interface MemberDocument {
  _id: string;
  until: Date;
}

interface CursorDocument {
  /** `<collection>:<partition>` */
  _id: string;
  /** The last second swept. */
  second: number;
}

/**
 * How scheduler replicas share the partitions (docs/decisions/0011): each renews a
 * membership every tick; the members whose membership has not lapsed are the live ones.
 * Each partition's sweep position is kept so that its next owner, after a restart or a
 * take-over, goes on from there (catching up whatever fell due meanwhile).
 */
export class PartitionStore {
  private readonly members: Model<MemberDocument>;
  private readonly cursors: Model<CursorDocument>;

  constructor(db: Connection) {
    this.members = db.model<MemberDocument>(
      'SchedulerMember',
      documentSchema<MemberDocument>('scheduler_members', { until: 'date' }),
    );
    this.cursors = db.model<CursorDocument>(
      'SweepCursor',
      documentSchema<CursorDocument>('sweep_cursors', { second: 'number' }),
    );
  }

  async renewMembership(member: string, until: Date): Promise<void> {
    await this.members.collection.updateOne({ _id: member } as never, { $set: { until } }, { upsert: true });
  }

  async leave(member: string): Promise<void> {
    await this.members.collection.deleteOne({ _id: member } as never);
  }

  /** The live members (a handful of documents: read whole, filtered here). */
  async liveMembers(now: Date): Promise<string[]> {
    const all = await this.members.find().lean<MemberDocument[]>();
    return all.filter((member) => member.until > now).map((member) => member._id);
  }

  async cursor(collection: string, partition: number): Promise<number | null> {
    const found = await this.cursors.findOne({ _id: `${collection}:${partition}` }).lean<CursorDocument>();
    return found?.second ?? null;
  }

  async saveCursor(collection: string, partition: number, second: number): Promise<void> {
    await this.cursors.collection.updateOne(
      { _id: `${collection}:${partition}` } as never,
      { $set: { second } },
      { upsert: true },
    );
  }
}
