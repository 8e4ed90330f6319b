import pLimit from 'p-limit';
import { SubscriptionSnapshot } from '@rs/contracts';
import { BY_ID, declareIndexes, documentSchema, isDuplicateKey, serverLimits, type CollectionIndexes } from '@rs/store';
import type { Clock } from '@rs/time';
import { type Connection, type Model } from 'mongoose';
import { dueKeyOf, landedLate, slotKey, SOON_KEY } from '../domain/due';

/**
 * Something the scheduler must act on at `dueAt`: a right to expire, a subscription to
 * renew or expire, as of the entity's `sequence` (its generation in the owning service).
 */
export interface DueItem {
  id: string;
  sequence: number;
  dueAt: Date;
  connectId: string;
  /** A subscription as of `sequence`, sent with its renewal (docs/decisions/0026); absent for rights and rebuilt items. */
  snapshot?: SubscriptionSnapshot;
}

/** A due item as stored: `ref` names its document. */
export interface StoredDueItem extends DueItem {
  ref: string;
}

/**
 * One version of an entity's due time. Versions are only ever inserted and deleted, never
 * updated: every write the scheduler makes is an `insertMany` or a delete, which FerretDB
 * does in bulk (docs/decisions/0011). A version made stale by a newer event stays until its
 * second is swept; its command then finds nothing to do in the owning service.
 */
interface DueDocument {
  /**
   * `<id>@<sequence>`: the same event or rebuild page recorded twice is one document; its
   * copy in the `soon` bucket when it landed late has `LATE_COPY` appended.
   */
  _id: string;
  id: string;
  sequence: number;
  dueAt: Date;
  /** `<partition>:<second>` or `soon` (see domain/due.ts): the one key queried. */
  due: string;
  connectId: string;
  /**
   * The snapshot as JSON text: FerretDB reads a second's items, and reads them again to delete
   * them, at about half the cost of the same snapshot as a nested document (docs/performance.md).
   */
  snapshot?: string | null;
}

const toItem = ({ _id, id, sequence, dueAt, connectId, snapshot }: DueDocument): StoredDueItem => {
  const loaded = snapshot ? snapshotLoaded(snapshot) : undefined;
  return { id, sequence, dueAt, connectId, ...(loaded ? { snapshot: loaded } : {}), ref: _id };
};

/**
 * A stored snapshot, or none when it does not read as one (docs/api.md: bad stored data fails
 * alone; without a snapshot the subscription is read by its owner).
 */
function snapshotLoaded(stored: string): SubscriptionSnapshot | undefined {
  let value: unknown;
  try {
    value = JSON.parse(stored);
  } catch {
    return undefined;
  }
  const parsed = SubscriptionSnapshot.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
const LATE_COPY = '~late';

/**
 * A collection of due items: written on the renewal path, read by `_id` and by one second of a
 * partition (and the `soon` bucket) on every tick; no other index.
 */
export const dueIndexes = (collection: string): CollectionIndexes => ({
  collection,
  queries: [
    BY_ID,
    {
      query: 'one second of a partition, the `soon` bucket (every tick)',
      mongodb: [{ key: { due: 1 }, name: 'due_key' }],
      ferretdb: ['due'],
    },
  ],
});

/** One collection of due items in the scheduler's own database (docs/architecture.md). */
export class DueStore {
  readonly model: Model<DueDocument>;

  constructor(
    db: Connection,
    readonly collection: string,
  ) {
    const schema = documentSchema<DueDocument>(collection, {
      id: 'string',
      sequence: 'number',
      dueAt: 'date',
      due: 'string',
      connectId: 'string',
      snapshot: 'json?',
    });
    this.model = db.model<DueDocument>(collection, schema);
  }

  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.model.db.db!, dueIndexes(this.collection));
  }

  /**
   * Records due times in bulk; a version recorded before is left as it is. Items whose write
   * may have landed after a sweeper read their second are recorded in the `soon` bucket too
   * (`landedLate`): a sweeper has them at its next sweep. Returns how many those were.
   */
  async recordMany(items: readonly DueItem[], clock: Clock): Promise<number> {
    if (items.length === 0) return 0;
    const recordedAt = clock();
    const docs = items.map(({ snapshot, ...item }) => ({
      _id: `${item.id}@${item.sequence}`,
      ...item,
      ...(snapshot ? { snapshot: JSON.stringify(snapshot) } : {}),
      due: dueKeyOf(item.id, item.dueAt, recordedAt),
    }));
    await this.insertMany(docs);
    const landedAt = clock();
    const late = docs.filter((doc) => landedLate(doc.due, landedAt));
    await this.insertMany(late.map((doc) => ({ ...doc, _id: `${doc._id}${LATE_COPY}`, due: SOON_KEY })));
    return late.length;
  }

  private async insertMany(docs: readonly DueDocument[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.model.collection.insertMany(docs as never[], { ordered: false });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  /** Every item stored under one second of a partition. */
  async inSecond(partition: number, second: number): Promise<StoredDueItem[]> {
    return (await this.model.find({ due: slotKey(partition, second) }).lean<DueDocument[]>()).map(toItem);
  }

  /** The second has been swept: its items are gone. */
  async removeSecond(partition: number, second: number): Promise<void> {
    await this.model.collection.deleteMany({ due: slotKey(partition, second) });
  }

  /** Items recorded already due, or nearly (the `soon` bucket, of every partition). */
  async soon(): Promise<StoredDueItem[]> {
    return (await this.model.find({ due: SOON_KEY }).lean<DueDocument[]>()).map(toItem);
  }

  /** Removes these versions (from the `soon` bucket, which keeps receiving items). */
  async remove(items: readonly StoredDueItem[]): Promise<void> {
    const { updateConcurrency } = await serverLimits(this.model.db.db!);
    await pLimit(updateConcurrency).map(items, (item) => this.model.collection.deleteOne({ _id: item.ref } as never));
  }
}
