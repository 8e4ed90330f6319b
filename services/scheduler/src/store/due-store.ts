import pLimit from 'p-limit';
import { SubscriptionSnapshot } from '@rs/contracts';
import { BY_ID, declareIndexes, documentSchema, isDuplicateKey, serverLimits, type CollectionIndexes } from '@rs/store';
import type { Clock } from '@rs/time';
import { type Connection, type Model } from 'mongoose';
import { clockKey, dueKeyOf, landedLate, secondOf, slotKey, SOON_KEY } from '../domain/due';

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
 * A version of something that lives on a test clock (docs/decisions/0048). It is kept under its
 * clock's key, never under a real second, so that no sweep commands it: the clock's driver does,
 * at the clock's time. Every version is kept, also one after which nothing is due: an advance
 * waits until each item it commanded has a newer version.
 */
export interface ClockDueItem {
  id: string;
  sequence: number;
  connectId: string;
  clockId: string;
  /** When it falls due on its clock; null when nothing is due after this version. */
  dueAt: Date | null;
  snapshot?: SubscriptionSnapshot;
  /** A right a change on the clock issued, whose creation is not recorded yet (sequence 0). */
  expected?: boolean;
  /** Set when the recording scheduler commands it as it records it (docs/decisions/0048). */
  commandedAt?: Date;
  /**
   * The clock instant it is kept under (its due time when absent): once the clock's time has
   * passed it, the version is let go with every other kept under it (a right's versions under
   * its end; a right expected, under the instant of the change that issued it).
   */
  instant?: Date | null;
}

export interface StoredClockDueItem extends ClockDueItem {
  ref: string;
  recordedAt: Date;
  instant: Date | null;
}

/** The instant key of a clock's version: milliseconds, or `-` for none (kept until its clock goes). */
const instantKey = (instant: Date | null): string => (instant ? String(instant.getTime()) : '-');

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
  /** Null only on a clock's versions after which nothing is due. */
  dueAt: Date | null;
  /** `<partition>:<second>`, `soon` or `clock:<clockId>` (see domain/due.ts): the one key queried. */
  due: string;
  connectId: string;
  /** On a clock's versions only (ClockDueItem). */
  clockId?: string;
  expected?: boolean;
  recordedAt?: Date;
  commandedAt?: Date;
  /** On a clock's versions only: `instantKey` of the instant it is kept under. */
  at?: string;
  /**
   * The snapshot as JSON text: FerretDB reads a second's items, and reads them again to delete
   * them, at about half the cost of the same snapshot as a nested document (docs/performance.md).
   */
  snapshot?: string | null;
}

const toItem = ({ _id, id, sequence, dueAt, connectId, snapshot }: DueDocument): StoredDueItem => {
  const loaded = snapshot ? snapshotLoaded(snapshot) : undefined;
  return { id, sequence, dueAt: dueAt!, connectId, ...(loaded ? { snapshot: loaded } : {}), ref: _id };
};

const toClockItem = (doc: DueDocument): StoredClockDueItem => {
  const { snapshot: _snapshot, ...item } = toItem(doc);
  const snapshot = doc.snapshot ? snapshotLoaded(doc.snapshot) : undefined;
  return {
    ...item,
    dueAt: doc.dueAt,
    clockId: doc.clockId!,
    ...(snapshot ? { snapshot } : {}),
    ...(doc.expected ? { expected: true } : {}),
    recordedAt: doc.recordedAt ?? new Date(0),
    ...(doc.commandedAt ? { commandedAt: doc.commandedAt } : {}),
    instant: doc.at && doc.at !== '-' ? new Date(Number(doc.at)) : doc.at === '-' ? null : doc.dueAt,
  };
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
      query: 'one second of a partition, the `soon` bucket (every tick); what a clock recorded in a second',
      mongodb: [{ key: { due: 1 }, name: 'due_key' }],
      ferretdb: ['due'],
    },
    {
      query: "a test clock's versions: all of them, or those under an instant it has passed (docs/decisions/0048)",
      mongodb: [{ key: { clockId: 1, at: 1 }, name: 'clock_instant', sparse: true }],
      ferretdb: ['clockId'],
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
      clockId: 'string?',
      expected: 'flag',
      recordedAt: { type: Date, default: undefined },
      commandedAt: { type: Date, default: undefined },
      at: 'string?',
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

  /**
   * Records versions of what lives on test clocks, each under its clock and the second it was
   * recorded in (what a clock's driver reads as it goes); one recorded before is left as it is.
   * Returns them as stored, without snapshots (as `ofClock` reads them).
   */
  async recordOnClocks(items: readonly ClockDueItem[], clock: Clock): Promise<StoredClockDueItem[]> {
    if (items.length === 0) return [];
    const recordedAt = clock();
    const docs = items.map(({ snapshot, instant, ...item }) => ({
      _id: `${item.id}@${item.sequence}`,
      ...item,
      ...(snapshot ? { snapshot: JSON.stringify(snapshot) } : {}),
      due: clockKey(item.clockId, secondOf(recordedAt)),
      at: instantKey(instant === undefined ? item.dueAt : instant),
      recordedAt,
    }));
    await this.insertMany(docs);
    return docs.map(({ snapshot: _snapshot, ...doc }) => toClockItem(doc));
  }

  /**
   * Lets go of every version kept on a clock under these instants, which its time has passed
   * (docs/decisions/0048): one delete by key each, as a sweep lets go of a second.
   */
  async removePassed(clockId: string, instants: readonly Date[]): Promise<void> {
    for (const instant of instants) await this.model.collection.deleteMany({ clockId, at: instantKey(instant) });
  }

  /**
   * Every version kept of what lives on one clock, or those recorded in one second; without
   * snapshots: read as an advance goes, they would be most of what is read and parsed, and a
   * renewal the driver commands is read by its owner instead (docs/decisions/0026).
   */
  async ofClock(clockId: string, recordedIn?: number): Promise<StoredClockDueItem[]> {
    const filter = recordedIn === undefined ? { clockId } : { due: clockKey(clockId, recordedIn) };
    const docs = await this.model.find(filter, { snapshot: 0 }).lean<DueDocument[]>();
    return docs.map(toClockItem);
  }

  /** Removes every version kept of what lives on one clock (the clock was deleted). */
  async removeClock(clockId: string): Promise<void> {
    await this.model.collection.deleteMany({ clockId });
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

  /** Removes these versions (from the `soon` bucket, which keeps receiving items, or a clock's). */
  async remove(items: ReadonlyArray<{ ref: string }>): Promise<void> {
    const { updateConcurrency } = await serverLimits(this.model.db.db!);
    await pLimit(updateConcurrency).map(items, (item) => this.model.collection.deleteOne({ _id: item.ref } as never));
  }
}
