import pLimit from 'p-limit';
import {
  afterId,
  listName,
  type ListPage,
  type ListPosition,
  BY_ID,
  bucketPages,
  declareIndexes,
  PENDING_EVENTS,
  type CollectionIndexes,
  OutboxCollection,
  outboxDocumentFields,
  OutboxStore,
  UserLists,
  ListedInserts,
  READ_CONCURRENCY,
  type EntityUpdate,
  type OutboxEntry,
  type SetAsideField,
  type WriteFailed,
  documentSchema,
  OUTBOX_PROJECTION,
  userOwnedIndexes,
} from '@rs/store';
import { bucketOf } from '@rs/hashing';
import { type Connection } from 'mongoose';
import type { SubscriptionEntity } from '../domain/subscription';
import { beforeRenewal, latestOf, planAsOf, progressOf, type Progress, type RenewalOrigin } from './progress-records';

/**
 * A subscription's document keeps the plan it was created with: later plans are on the
 * records of the changes that made them (docs/decisions/0047).
 */
interface SubscriptionDocument extends Omit<SubscriptionEntity, 'subscriptionId' | 'plan' | 'pendingChange'> {
  _id: string;
  deleted: boolean;
  /** See `OutboxStore.setAside`. */
  setAside?: SetAsideField['setAside'];
}

const schema = documentSchema<SubscriptionDocument>('subscriptions', {
  userId: 'string',
  grantorId: 'string',
  grantorContext: 'string?',
  state: 'string',
  rightsSpec: 'json',
  timeSpec: 'string',
  origTimeSpec: 'string',
  paymentAgreement: 'string?',
  nextPeriod: 'number?',
  clockId: 'string?',
  deleted: 'flag',
  ...outboxDocumentFields,
});

/** The subscriptions' queries and their indexes (docs/operations.md, "Queries and their indexes"). */
export const SUBSCRIPTION_INDEXES = userOwnedIndexes('subscriptions', {
  pagedFor: "the scheduler's rebuild",
  more: [
    {
      query: "a test clock's subscriptions (its deletion, docs/decisions/0048)",
      mongodb: [{ key: { clockId: 1 }, name: 'by_clock', sparse: true }],
      ferretdb: ['clockId'],
    },
  ],
});

function toEntity(doc: SubscriptionDocument): SubscriptionEntity {
  const { _id, deleted: _deleted, ...fields } = doc as SubscriptionDocument & { outbox?: unknown };
  delete (fields as { outbox?: unknown }).outbox;
  delete (fields as { setAside?: unknown }).setAside;
  return { subscriptionId: _id, ...fields, plan: 0, pendingChange: null };
}

const toFields = ({ subscriptionId: _id, plan: _plan, pendingChange: _pending, ...fields }: SubscriptionEntity) =>
  fields;

export interface SubscriptionQuery {
  userId: string;
  /** Only this grantor's subscriptions; null: all of the user's. */
  grantorId: string | null;
  limit: number;
  /** Where the previous page ended. */
  after: ListPosition | null;
}

/** The lists of a user's subscriptions (docs/decisions/0049): all of them, and those of one grantor. */
const SUBSCRIPTION_LISTS = { all: listName('all'), ofGrantor: (grantorId: string) => listName('g', grantorId) };

/** A renewal: the subscription as read, and as renewed. */
export interface RenewalChange {
  current: SubscriptionEntity;
  next: SubscriptionEntity;
}

/** The subscriptions' changes after creation, one record per (subscription, generation) (docs/decisions/0026). */
export const SUBSCRIPTION_PROGRESS = 'subscription_progress';

/** The records' queries: each claimed by `_id`, read with its subscription or its bucket's, relayed. */
export const PROGRESS_INDEXES: CollectionIndexes = {
  collection: SUBSCRIPTION_PROGRESS,
  queries: [
    BY_ID,
    {
      query: "a subscription's records (every read of it)",
      mongodb: [{ key: { subscriptionId: 1 }, name: 'by_subscription' }],
      ferretdb: ['subscriptionId'],
    },
    bucketPages("the scheduler's rebuild"),
    PENDING_EVENTS,
  ],
};

interface ProgressDocument extends Progress {
  /** `<subscriptionId>@<generation>`: the generation it claims. */
  _id: string;
  subscriptionId: string;
  userId: string;
  /** The subscription's bucket, so the scheduler's rebuild reads a bucket's records with its subscriptions. */
  bucket: number;
  /** A renewal's origin (`RenewalOrigin`): what its events and commands follow from (docs/decisions/0036). */
  fromState?: RenewalOrigin['fromState'];
  fromPeriod?: RenewalOrigin['fromPeriod'];
}

/** A subscription's last renewal, to publish its messages again: the subscription it started from, and when. */
export interface LastRenewal {
  before: SubscriptionEntity;
  at: Date;
}

/** Sorts after every record id `<id>@<generation>` of an id, and before any later id. */
const AFTER_EVERY_RECORD = '@\uffff';
/** A record as folded into its subscription: no renewal origin, no outbox. */
const PROGRESS_PROJECTION = { fromState: 0, fromPeriod: 0, ...OUTBOX_PROJECTION } as const;

const progressId = (subscriptionId: string, generation: number) => `${subscriptionId}@${generation}`;

const recordOf = (current: SubscriptionEntity, next: SubscriptionEntity, deleted: boolean): ProgressDocument => ({
  _id: progressId(next.subscriptionId, next.generation),
  subscriptionId: next.subscriptionId,
  userId: next.userId,
  bucket: bucketOf(next.subscriptionId),
  ...progressOf(current, next, deleted),
});

/**
 * The subscriptions service's own database. A subscription is its document as created, and
 * every later change is a record inserted under (subscription, generation) with its events
 * and commands (docs/architecture.md; docs/decisions/0003 and 0026): renewal, the bulk job, writes only
 * inserts. Reads apply the latest record; an API change also copies it into the document
 * (so lists filter and page on current documents), after it is stored.
 */
export class SubscriptionStore extends OutboxStore<SubscriptionDocument, SubscriptionEntity> {
  private readonly progress: OutboxCollection;
  private readonly lists: UserLists<SubscriptionDocument>;
  private readonly inserts: ListedInserts<SubscriptionDocument>;

  constructor(db: Connection) {
    super(db, 'Subscription', schema, { tombstone: 'deleted', toEntity, indexes: SUBSCRIPTION_INDEXES });
    this.progress = new OutboxCollection(db.db!, SUBSCRIPTION_PROGRESS);
    this.lists = new UserLists<SubscriptionDocument>(db.db!, this.model.collection, (doc) => [
      SUBSCRIPTION_LISTS.all,
      SUBSCRIPTION_LISTS.ofGrantor(doc.grantorId),
    ]);
    this.inserts = new ListedInserts(this.lists, this.documents);
  }

  override async ensureIndexes(): Promise<void> {
    await super.ensureIndexes();
    await declareIndexes(this.model.db.db!, PROGRESS_INDEXES);
  }

  async find(userId: string, id: string): Promise<SubscriptionEntity | null> {
    const found = await this.findEvenRemoved(userId, id);
    return found && !found.removed ? found.entity : null;
  }

  /** By its id alone: its user is read from it, then its records are folded in as `find` does. */
  async findById(id: string): Promise<SubscriptionEntity | null> {
    const doc = await this.findDocument(id);
    if (!doc) return null;
    const { entity, deleted } = this.latest(doc, await this.recordsOf(id, doc.userId));
    return deleted ? null : entity;
  }

  findMany(keys: ReadonlyArray<{ userId: string; id: string }>): Promise<Array<SubscriptionEntity | null>> {
    return pLimit(READ_CONCURRENCY).map(keys, ({ userId, id }) => this.find(userId, id));
  }

  /**
   * The document first, then its records: a change's record is stored before it is copied into
   * the document (`compact`), so records read after the document hold every change it shows.
   * Read at once, the records could miss a change the document already shows, and the
   * subscription would read as of that change's generation with the plan before it: a plan
   * change decided from it then named the same plan again, and its rights were never issued.
   */
  async findEvenRemoved(userId: string, id: string): Promise<{ entity: SubscriptionEntity; removed: boolean } | null> {
    const doc = await this.findDocument(id, { userId });
    if (!doc) return null;
    const { entity, deleted } = this.latest(doc, await this.recordsOf(id, userId));
    return { entity, removed: deleted };
  }

  /** Every subscription created on a test clock, by its user and id (deleted ones too: `find` tells). */
  async onClock(clockId: string): Promise<Array<{ userId: string; id: string }>> {
    const docs = await this.model
      .find({ clockId, deleted: { $ne: true } }, { _id: 1, userId: 1 })
      .lean<Array<Pick<SubscriptionDocument, '_id' | 'userId'>>>();
    return docs.map((doc) => ({ userId: doc.userId, id: doc._id }));
  }

  /**
   * A page of the live subscriptions of one bucket in id order (for the scheduler's rebuild;
   * docs/operations.md), but those set aside at their current generation (their renewal failed
   * alone; docs/api.md), each with its records: those of the page's ids only, a range of
   * `_id` (`<id>@<generation>` sorts after its id and before any later one).
   */
  async ofBucket(bucket: number, page: { after: string | undefined; limit: number }) {
    const docs = (await this.model.collection
      .find({ bucket, ...this.liveCondition, ...afterId(page.after) } as never, { projection: this.hiddenFields })
      .sort({ _id: 1 })
      .limit(page.limit)
      .toArray()) as unknown as SubscriptionDocument[];
    if (docs.length === 0) return { items: [], lastId: null };
    const recordIds = {
      ...(page.after === undefined ? {} : { $gt: `${page.after}${AFTER_EVERY_RECORD}` }),
      $lt: `${docs.at(-1)!._id}${AFTER_EVERY_RECORD}`,
    };
    const recordsOf = groupBySubscription(await this.recordsWhere({ bucket, _id: recordIds }));
    const items = docs.flatMap((doc) => {
      const { entity, deleted } = this.latest(doc, recordsOf.get(doc._id) ?? []);
      return deleted || doc.setAside?.generation === entity.generation ? [] : [entity];
    });
    return { items, lastId: docs.length === page.limit ? docs.at(-1)!._id : null };
  }

  /** A page of a user's subscriptions (docs/api.md "Listing filters"), newest first, each with its records. */
  async list(query: SubscriptionQuery): Promise<ListPage<SubscriptionEntity>> {
    const { userId, grantorId, limit } = query;
    const list = grantorId === null ? SUBSCRIPTION_LISTS.all : SUBSCRIPTION_LISTS.ofGrantor(grantorId);
    const items: SubscriptionEntity[] = [];
    let last = query.after;
    // A subscription deleted since its document was last compacted is listed by the document
    // but not shown: the page reads on, so that a short page still means the list's end.
    for (;;) {
      const wanted = limit - items.length;
      const listed = await this.lists.page(
        { userId, name: list },
        { conditions: [this.liveCondition], after: last, limit: wanted },
      );
      const page = { items: listed.items.map(this.toEntity), last: listed.last };
      const records = await pLimit(READ_CONCURRENCY).map(page.items, (stored) =>
        this.recordsOf(stored.subscriptionId, userId),
      );
      page.items.forEach((stored, index) => {
        const { entity, deleted } = latestOf(stored, false, records[index]!);
        if (!deleted) items.push(entity);
      });
      last = page.last ?? last;
      if (page.items.length < wanted || items.length === limit) return { items, last };
    }
  }

  /** Stores a new subscription with its messages; false when its id is taken. */
  async insert(subscription: SubscriptionEntity, outbox: OutboxEntry[]): Promise<boolean> {
    return this.inserts.insert({ _id: subscription.subscriptionId, ...toFields(subscription), deleted: false }, outbox);
  }

  /**
   * Stores a change decided from `current` with its messages, if no other writer has stored
   * one since: false when its generation is taken. A change that `removes` it deletes it.
   */
  async update({ current, next, outbox, removes }: EntityUpdate<SubscriptionEntity>): Promise<boolean> {
    const record = recordOf(current, next, removes ?? false);
    if (!(await this.progress.insert(record, outbox))) return false;
    await this.compact(record);
    return true;
  }

  /**
   * A batch of renewals, each stored if its subscription is still at the generation it was
   * planned from; for each, whether it was. A record keeps where its renewal started from, not
   * its events and commands: the renewal command's handler publishes those before it acks
   * (docs/decisions/0011), and builds them again from the origin when the command comes back
   * (docs/decisions/0036). Events kept as documents were most of a record's size, and FerretDB's
   * cost of an insert grows with it (docs/performance.md, "Measurements behind the code").
   */
  renewMany(changes: readonly RenewalChange[]): Promise<Array<boolean | WriteFailed>> {
    return this.progress.insertEach(
      changes.map(({ current, next }) => ({
        doc: { ...recordOf(current, next, false), fromState: current.state, fromPeriod: current.nextPeriod },
        outbox: [],
      })),
    );
  }

  /** Each subscription's last renewal (null: none, or the subscription is gone), to publish its messages again. */
  lastRenewalsOf(keys: ReadonlyArray<{ userId: string; id: string }>): Promise<Array<LastRenewal | null>> {
    return pLimit(READ_CONCURRENCY).map(keys, async ({ userId, id }) => {
      // The document first, then its records (as in `findEvenRemoved`).
      const doc = await this.findDocument(id, { userId });
      const records = (await this.recordsWhere({ subscriptionId: id }, { outbox: 0, outboxPending: 0 })).filter(
        (record) => record.userId === userId,
      );
      const renewals = records.filter((record) => record.fromState !== undefined);
      const last = renewals.reduce<ProgressDocument | null>(
        (latest, record) => (latest && latest.generation > record.generation ? latest : record),
        null,
      );
      if (!last) return null;
      if (!doc || last.fromState === undefined) return null;
      const origin = { ...last, fromState: last.fromState, fromPeriod: last.fromPeriod ?? null };
      const created = this.toEntity(doc);
      const plan = planAsOf(created, records, last.generation - 1);
      return { before: beforeRenewal(created, origin, plan), at: last.updatedAt };
    });
  }

  /** Sets a subscription aside at its current generation (see `OutboxStore.setAside`). */
  override async setAside(id: string, generation: number, reason: string): Promise<void> {
    await this.model.collection.updateOne({ _id: id } as never, {
      $set: { setAside: { generation, reason, at: new Date() } },
    });
  }

  /**
   * Copies a stored change into the subscription's document, unless a later one is there
   * already. Only lists and the rebuild's filter gain from it: every read applies the latest
   * record anyway, so a copy lost in a crash, or two in the wrong order, change no answer.
   * Never while the document's own events (its creation's) are pending: FerretDB updates by
   * reading and rewriting the whole document, and a rewrite racing the outbox relay's
   * clean-up on another replica would put the published events back (sent twice). The next
   * change after the relay copies the latest then.
   */
  private async compact(record: ProgressDocument): Promise<void> {
    const { generation, state, nextPeriod, updatedAt, deleted } = record;
    await this.model.collection
      .updateOne({ _id: record.subscriptionId, generation: { $lt: generation }, outboxPending: false } as never, {
        $set: { generation, state, nextPeriod, updatedAt, deleted },
      })
      .catch(() => undefined);
  }

  private async recordsWhere(
    filter: Record<string, unknown>,
    projection: object = PROGRESS_PROJECTION,
  ): Promise<ProgressDocument[]> {
    const records = await this.progress.collection.find(filter as never, { projection }).toArray();
    return records as unknown as ProgressDocument[];
  }

  /**
   * A subscription's records, if it is the user's: read by the subscription alone (a second
   * equality would make FerretDB's PostgreSQL intersect it with every record of the user).
   */
  private async recordsOf(subscriptionId: string, userId: string): Promise<ProgressDocument[]> {
    return (await this.recordsWhere({ subscriptionId })).filter((record) => record.userId === userId);
  }

  private latest(doc: SubscriptionDocument, records: readonly Progress[]) {
    return latestOf(this.toEntity(doc), doc.deleted === true, records);
  }
}

function groupBySubscription(records: readonly ProgressDocument[]): Map<string, ProgressDocument[]> {
  const grouped = new Map<string, ProgressDocument[]>();
  for (const record of records) {
    const list = grouped.get(record.subscriptionId);
    if (list) list.push(record);
    else grouped.set(record.subscriptionId, [record]);
  }
  return grouped;
}
