import pLimit from 'p-limit';
import {
  documentSchema,
  listName,
  outboxDocumentFields,
  OutboxStore,
  READ_CONCURRENCY,
  UserLists,
  ListedInserts,
  userOwnedIndexes,
} from '@rs/store';
import type { EntityUpdate, ListPage, ListPosition, OutboxEntry, SetAsideField } from '@rs/store';
import { bucketOf } from '@rs/hashing';
import { type Connection } from 'mongoose';
import type { ReadExpiry, RightEntity } from '../domain/right';
import { audiencesOf, type Audience } from '../domain/audiences';

interface RightDocument extends Omit<RightEntity, 'rightId' | 'payload'> {
  _id: string;
  /**
   * The payload as JSON text (docs/api.md "Payloads"): any JSON round-trips, whatever its keys
   * (`$`, `.`, NUL, `_bsontype`), which neither MongoDB nor FerretDB stores as a document.
   */
  payloadJson: string | null;
  /** See `OutboxStore.setAside`. */
  setAside?: SetAsideField['setAside'];
  /** A removed right stays as a tombstone: its id is never reused, its events still go out. */
  removed: boolean;
  /** `expiryKeyOf`: expiry reads the rights ending together by it. */
  expiresKey: string;
}

/**
 * Rights of one expiry key a batch must ask for before the key is read whole: below, they are
 * read by id (a key holds every right of its bucket ending that second, which at 100,000
 * rights ending together is 1,562, so a batch holding a few of them would read the rest too).
 */
const MIN_ASKED_PER_KEY = 8;

/**
 * The key expiry reads a right by: its bucket and the second its interval ends (one equality,
 * which FerretDB answers from an index). The scheduler commands the rights of one partition
 * and second together, and a partition is a set of buckets, so a command's rights are a few
 * keys (docs/decisions/0027).
 */
export const expiryKeyOf = (rightId: string, end: Date): string =>
  `${bucketOf(rightId)}:${Math.floor(end.getTime() / 1000)}`;

const rightSchema = documentSchema<RightDocument>('rights', {
  userId: 'string',
  state: 'string',
  grantorId: 'string',
  grantorContext: 'string?',
  serviceProviderId: 'string?',
  sku: 'string',
  payloadJson: 'string?',
  used: 'boolean',
  quantity: 'number?',
  remaining: 'number?',
  holds: 'json[]',
  start: 'date',
  end: 'date',
  grace: 'string?',
  expiresAt: 'date',
  timeInterval: 'string',
  subscriptionId: 'string?',
  clockId: 'string?',
  removed: 'flag',
  expiresKey: 'string',
  ...outboxDocumentFields,
});
/** The rights' queries and their indexes (docs/operations.md, "Queries and their indexes"). */
export const RIGHT_INDEXES = userOwnedIndexes('rights', {
  pagedFor: "the scheduler's rebuild; the gateway's entitlement projection",
  more: [
    {
      query: "a provider's view of a user's rights",
      mongodb: [{ key: { serviceProviderId: 1, userId: 1 }, name: 'by_service_provider', sparse: true }],
      ferretdb: ['userId'],
    },
    {
      query: "a subscription's rights of a user (cascades)",
      mongodb: [{ key: { subscriptionId: 1 }, name: 'by_subscription', sparse: true }],
      ferretdb: ['userId'],
    },
    {
      query: "a user's rights of a SKU (consumption by SKU)",
      mongodb: [{ key: { userId: 1, sku: 1 }, name: 'by_user_and_sku' }],
      ferretdb: ['userId'],
    },
    {
      query: "a test clock's rights (its deletion, docs/decisions/0048)",
      mongodb: [{ key: { clockId: 1 }, name: 'by_clock', sparse: true }],
      ferretdb: ['clockId'],
    },
    {
      query: 'the rights ending in one second of a bucket (expiry, docs/decisions/0027)',
      mongodb: [{ key: { expiresKey: 1 }, name: 'by_expiry_key', sparse: true }],
      ferretdb: ['expiresKey'],
    },
  ],
});

// Documents are read without their outbox (`hiddenFields`) and with their unset fields restored
// (`OutboxStore.toEntity`): every field of the entity is there.
const toEntity = ({
  _id,
  removed: _removed,
  setAside: _setAside,
  expiresKey: _expiresKey,
  payloadJson,
  ...fields
}: RightDocument): RightEntity => ({
  rightId: _id,
  ...fields,
  payload: payloadJson === null ? null : JSON.parse(payloadJson),
});

/**
 * A stored right expiry cannot read (bad stored data, such as payload text that is not JSON):
 * it fails alone (docs/api.md), and is set aside by its id and generation.
 */
export class UnreadableRight extends Error {
  constructor(
    readonly rightId: string,
    readonly userId: string,
    readonly generation: number,
    cause: unknown,
  ) {
    super(`right ${rightId} cannot be read: ${String((cause as Error)?.message ?? cause)}`);
  }
}

const toFields = ({ rightId, payload, ...fields }: RightEntity) => ({
  ...fields,
  payloadJson: payload === null ? null : JSON.stringify(payload),
  expiresKey: expiryKeyOf(rightId, fields.expiresAt),
});

export interface RightQuery {
  userId: string;
  /** Whose rights: those of the audience the caller may see and asked for (`audienceOfList`). */
  audience: Audience;
  /** Only rights living on this test clock, or on real time (`clockId` null); null: wherever they live. */
  on: { clockId: string | null } | null;
  /** Only rights stored ACTIVE whose interval holds `at` and ends after `endsAfter`. */
  active: { at: Date; endsAfter: Date } | null;
  limit: number;
  /** Where the previous page ended. */
  after: ListPosition | null;
}

/** A right's lists are its audiences (docs/decisions/0049): one list of the user's per audience. */
const listOf = ([kind, ...parties]: Audience): string => listName(kind, ...parties);

/**
 * The rights service's own database. Every change is a compare-and-set on `generation`
 * that stores the new state and its events together (docs/architecture.md, docs/decisions/0003).
 */
export class RightStore extends OutboxStore<RightDocument, RightEntity> {
  private readonly lists: UserLists<RightDocument>;
  private readonly inserts: ListedInserts<RightDocument>;

  constructor(db: Connection) {
    super(db, 'Right', rightSchema, { tombstone: 'removed', toEntity, indexes: RIGHT_INDEXES });
    this.lists = new UserLists<RightDocument>(db.db!, this.model.collection, (right) => audiencesOf(right).map(listOf));
    this.inserts = new ListedInserts(this.lists, this.documents);
  }

  /** A user's live right (another user's is none). */
  find(userId: string, rightId: string): Promise<RightEntity | null> {
    return this.findLive(rightId, { userId });
  }

  /** The live right `rightId`, whichever user's it is (docs/api.md "Find by id"). */
  findById(rightId: string): Promise<RightEntity | null> {
    return this.findLive(rightId);
  }

  /** The right, live or a tombstone (whose history stays readable, docs/api.md). */
  async findEvenRemoved(userId: string, rightId: string): Promise<{ entity: RightEntity; removed: boolean } | null> {
    const doc = await this.findDocument(rightId, { userId });
    return doc ? { entity: this.toEntity(doc), removed: !this.isLive(doc) } : null;
  }

  /**
   * Rights by id, for a batch (expiry). Those whose end is given, when the batch asks for
   * enough of one key, are read a key at a time (`expiryKeyOf`); the others, and any not found
   * under the key its command gave, by id. One that cannot be read is an `UnreadableRight`.
   */
  async storedMany(
    keys: ReadonlyArray<{ userId: string; id: string; end?: Date }>,
  ): Promise<Array<RightEntity | UnreadableRight | null>> {
    const byKey = new Map<string, RightEntity | UnreadableRight>();
    const asked = new Map<string, number>();
    for (const key of keys.flatMap(({ id, end }) => (end ? [expiryKeyOf(id, end)] : [])))
      asked.set(key, (asked.get(key) ?? 0) + 1);
    // A key is worth a query when the batch asks for many of its rights; a few are read by id.
    const expiryKeys = [...asked].filter(([, count]) => count >= MIN_ASKED_PER_KEY).map(([key]) => key);
    await pLimit(READ_CONCURRENCY).map(expiryKeys, async (expiresKey) => {
      const docs = await this.model
        .find({ expiresKey, removed: { $ne: true } }, this.hiddenFields)
        .lean<RightDocument[]>();
      for (const doc of docs) byKey.set(doc._id, this.readable(doc));
    });
    const found: Array<RightEntity | UnreadableRight | null> = keys.map(({ userId, id }) => {
      const right = byKey.get(id);
      return right && right.userId === userId ? right : null;
    });
    const missing = keys.flatMap((key, index) => (found[index] ? [] : [{ key, index }]));
    await pLimit(READ_CONCURRENCY).map(missing, async ({ key, index }) => {
      const doc = await this.findLiveDocument(key.id, { userId: key.userId });
      found[index] = doc && this.readable(doc);
    });
    return found;
  }

  /**
   * The ACTIVE and SUSPENDED rights of one bucket (for the scheduler's rebuild), but those set
   * aside at their current generation (their expiry failed alone; docs/api.md).
   */
  expirable(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.inBucket(bucket, page, { state: { $in: ['ACTIVE', 'SUSPENDED'] } });
  }

  /**
   * The rights of one bucket stored ACTIVE (for the gateway's entitlement projection,
   * docs/entitlements.md); `lastId` as `inBucket` reads it.
   */
  storedActive(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.inBucket(bucket, page, { state: 'ACTIVE' }, true);
  }

  /** The rights a subscription issued (for the suspend/activate cascade). */
  async ofSubscription(userId: string, subscriptionId: string): Promise<RightEntity[]> {
    const docs = await this.model
      .find({ subscriptionId, userId, removed: { $ne: true } }, this.hiddenFields)
      .lean<RightDocument[]>();
    return docs.map(this.toEntity);
  }

  /** Every live right on a test clock, by its user and id (docs/decisions/0048). */
  async onClock(clockId: string): Promise<Array<{ userId: string; rightId: string }>> {
    const docs = await this.model
      .find({ clockId, removed: { $ne: true } }, { _id: 1, userId: 1 })
      .lean<Array<Pick<RightDocument, '_id' | 'userId'>>>();
    return docs.map((doc) => ({ userId: doc.userId, rightId: doc._id }));
  }

  /** A user's rights of one SKU (consumption by SKU: the caller's visibility and the burn order are the use case's). */
  async ofUserAndSku(userId: string, sku: string): Promise<RightEntity[]> {
    const docs = await this.model
      .find({ userId, sku, removed: { $ne: true } }, this.hiddenFields)
      .lean<RightDocument[]>();
    return docs.map(this.toEntity);
  }

  /** A page of a user's rights (docs/api.md "Listing filters"), newest first. */
  async list(query: RightQuery): Promise<ListPage<RightEntity>> {
    const conditions: object[] = [];
    if (query.on) conditions.push({ clockId: query.on.clockId });
    if (query.active) {
      const { at, endsAfter } = query.active;
      conditions.push({ state: 'ACTIVE', start: { $lte: at }, end: { $gt: endsAfter } });
    }
    const page = await this.lists.page(
      { userId: query.userId, name: listOf(query.audience) },
      { conditions: [...conditions, this.liveCondition], after: query.after, limit: query.limit },
    );
    return { items: page.items.map(this.toEntity), last: page.last };
  }

  /** Stores a new right with its messages; false when the id exists (also as a tombstone). */
  async insert(right: RightEntity, outbox: OutboxEntry[]): Promise<boolean> {
    return this.inserts.insert(toDocument(right), outbox);
  }

  /**
   * Stores new rights in bulk, without pending events: the command that issues them
   * publishes them itself before it is acked (docs/decisions/0011). Those whose id exists
   * are left alone. Returns the ids that existed.
   */
  async insertManyWithoutEvents(rights: readonly RightEntity[]): Promise<Set<string>> {
    const docs = await this.lists.placed(rights.map(toDocument));
    const stored = await this.documents.insertEach(
      docs.map((doc) => ({ doc, outbox: [] })),
      { failAll: true },
    );
    return new Set(docs.flatMap((doc, index) => (stored[index] === true ? [] : [doc._id])));
  }

  /**
   * Keeps the id of a right that a plan change ended before it was issued (docs/decisions/0052):
   * a tombstone, so that its `rights.issue`, whenever it comes, creates nothing. False when the
   * id exists (the right was issued meanwhile: the caller ends it as it is).
   */
  supersede(right: RightEntity): Promise<boolean> {
    const tombstone = { ...toDocument(right), removed: true };
    return this.documents.insert(tombstone, []);
  }

  /**
   * Which of these ids are tombstones: removed, or superseded before they were issued. Read
   * by id, one by one: FerretDB answers a read of many ids (`$in`) by reading every right.
   */
  async tombstonesAmong(ids: readonly string[]): Promise<Set<string>> {
    const docs = await pLimit(READ_CONCURRENCY).map(ids, (id) => this.findDocument(id));
    return new Set(docs.flatMap((doc) => (doc && !this.isLive(doc) ? [doc._id] : [])));
  }

  /**
   * Compare-and-set: stores `next` and its messages only if the right is still at `current`'s
   * generation; a change that `removes` it leaves a tombstone.
   */
  update({ current, next, outbox, removes }: EntityUpdate<RightEntity>): Promise<boolean> {
    return this.documents.compareAndSet({ ...this.changeOf(current, next, removes ?? false), outbox });
  }

  /**
   * Writes the expiry of rights that reads show EXPIRED already (`asOf`: each is at the
   * generation after the stored one), where nothing has changed them since; their events are
   * out before (docs/decisions/0027). For each, whether it was written.
   */
  writeExpiries(expired: readonly ReadExpiry[]) {
    return this.documents.compareAndSetMany(
      expired.map((right) => ({
        id: right.rightId,
        generation: right.generation - 1,
        set: { state: right.state, generation: right.generation, updatedAt: right.updatedAt },
        outbox: [],
      })),
    );
  }

  /** `toEntity`, or the right that cannot be read. */
  private readable(doc: RightDocument): RightEntity | UnreadableRight {
    try {
      return this.toEntity(doc);
    } catch (error) {
      return new UnreadableRight(doc._id, doc.userId, doc.generation, error);
    }
  }

  /** A change of `current`; an EXPIRED one read before its expiry was written is stored at the generation before. */
  private changeOf(current: RightEntity, next: RightEntity, removed: boolean) {
    return {
      id: current.rightId,
      generation: current.generation,
      ...(current.state === 'EXPIRED' ? { orStoredAt: current.generation - 1 } : {}),
      set: { ...toFields(next), removed },
    };
  }
}

const toDocument = (right: RightEntity) => ({ _id: right.rightId, ...toFields(right), removed: false });
