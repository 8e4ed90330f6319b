import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import type { Connection, Model, mongo, Schema } from 'mongoose';
import { documentLock } from './document-lock';
import { CAS_FIELD, newOutbox, OUTBOX_PROJECTION, pendingKeyAt, setWithOutbox } from './outbox';
import type { OutboxEntry } from './outbox-entry';
import { isDuplicateKey, isTransient, WriteFailed } from './items';
import { inChunks, serverLimits } from './server-limits';
import { declareIndexes, type CollectionIndexes, type IndexedQuery } from './indexes';
import { announcePending, type InsertedPending } from './pending';
import { bucketOf } from '@rs/hashing';
import { LISTING_PROJECTION } from './listing';
import { unsetFieldsOf, UnsetFields } from './schema';

/** A rebuild's pages (`inBucket`, docs/architecture.md): a bucket in id order; `readers` say whose. */
export const bucketPages = (readers: string): IndexedQuery => ({
  query: `a page of a bucket (${readers})`,
  mongodb: [{ key: { bucket: 1, _id: 1 }, name: 'by_bucket_page' }],
  ferretdb: ['bucket'],
});

/** The condition of a page that starts after the id `after` (none for a first page). */
export const afterId = (after: string | undefined) => (after === undefined ? {} : { _id: { $gt: after } });

/** A new document with its pending events; its bucket is its id's unless it names one (a record of another document). */
const withBucket = (doc: { _id: string; bucket?: number }, outbox: OutboxEntry[]) => ({
  bucket: bucketOf(doc._id),
  ...doc,
  ...newOutbox(outbox),
});

/** The documents an unordered `insertMany` refused, by their index in it (undefined: not such an error). */
function writeErrorsOf(error: unknown): Array<{ index: number; code?: number; errmsg?: string }> | undefined {
  const writeErrors = (error as { writeErrors?: unknown }).writeErrors;
  return Array.isArray(writeErrors)
    ? (writeErrors as Array<{ index: number; code?: number; errmsg?: string }>)
    : undefined;
}

/** A change decided from the document at `generation`, to store only if it is still there. */
export interface StoredChange {
  id: string;
  /** The generation the change was decided from: the compare-and-set's condition. */
  generation: number;
  /**
   * Another generation the document may be stored at that reads as `generation` (a right
   * expired by time whose expiry is not written yet: docs/decisions/0027).
   */
  orStoredAt?: number;
  /** The new fields, the new generation among them. */
  set: object;
  /** Events (and commands) the change emits, stored in the same write. */
  outbox: OutboxEntry[];
}

/**
 * Point reads in flight at once for a batch: FerretDB answers a lookup by `_id` from its GIN
 * index but `$in` of many ids by reading the whole collection, so a batch reads by id,
 * concurrently (docs/performance.md, "Measurements behind the code").
 */
export const READ_CONCURRENCY = 16;

/**
 * The one store mechanism of every service (docs/architecture.md; docs/decisions/0003, 0008, 0011):
 * documents that carry a `generation` and their pending events (the embedded outbox),
 * changed only by compare-and-set on that generation, one document or a batch at a time.
 * `guard` is a condition every write must also meet (e.g. "not a tombstone").
 */
export class OutboxCollection {
  readonly collection: mongo.Collection;

  constructor(
    private readonly db: mongo.Db,
    readonly name: string,
    private readonly guard: Record<string, unknown> = {},
    /** Fields a new document is stored without while they hold what they hold until set. */
    private readonly unset = new UnsetFields([]),
  ) {
    this.collection = db.collection(name);
  }

  /** Stores a new document with its events; false when its `_id` exists (also as a tombstone). */
  async insert(doc: { _id: string }, outbox: OutboxEntry[]): Promise<boolean> {
    const stored = withBucket(this.unset.leftOut(doc), outbox);
    try {
      await this.collection.insertOne(stored as never);
      this.announceInserted([stored]);
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /**
   * Stores new documents with their events in few `insertMany` calls. Documents whose id
   * exists are left as they are (deterministic ids make a repeated batch harmless); returns
   * how many were new.
   */
  async insertMany(docs: ReadonlyArray<{ doc: { _id: string }; outbox: OutboxEntry[] }>): Promise<number> {
    const outcomes = await this.insertEach(docs, { failAll: true });
    return outcomes.filter((stored) => stored === true).length;
  }

  /**
   * Inserts each document, as a few `insertMany` calls at once (`inChunks`, docs/decisions/0076);
   * for each, whether it was stored (false: its `_id` was taken), or why the store refused that
   * one (docs/api.md: it fails alone). An insert keyed by what it claims (docs/decisions/0026)
   * is a compare-and-set that costs an insert. A transient failure fails the batch.
   */
  async insertEach(
    docs: ReadonlyArray<{ doc: { _id: string }; outbox: OutboxEntry[] }>,
    /** `failAll`: a document refused for another reason than its taken id fails the batch. */
    { failAll = false }: { failAll?: boolean } = {},
  ): Promise<Array<boolean | WriteFailed>> {
    const written = docs.map(({ doc, outbox }) => withBucket(this.unset.leftOut(doc), outbox));
    const outcomes = (
      await inChunks(this.db, written, async (chunk): Promise<Array<boolean | WriteFailed>> => {
        const done: Array<boolean | WriteFailed> = chunk.map(() => true);
        try {
          await this.collection.insertMany(chunk as never[], { ordered: false });
        } catch (error) {
          const writeErrors = writeErrorsOf(error);
          // No document named: the whole insert failed (and was not stored), whatever the error.
          if (isTransient(error) || writeErrors === undefined || writeErrors.length === 0) throw error;
          for (const failure of writeErrors) {
            if (failAll && failure.code !== 11000) throw error;
            done[failure.index] = failure.code === 11000 ? false : new WriteFailed(new Error(failure.errmsg));
          }
        }
        return done;
      })
    ).flat();
    this.announceInserted(written.filter((_, index) => outcomes[index] === true));
    return outcomes;
  }

  /** Stores `change` only if the document is still at `change.generation`; false when another writer won. */
  async compareAndSet(change: StoredChange): Promise<boolean> {
    // FerretDB checks the filter on the document it read, not on the row it writes: its
    // PostgreSQL guard checks the stamp's generations again as it writes (docs/decisions/0046).
    const pendingKey = pendingKeyAt(Date.now());
    const stamped = !(await serverLimits(this.db)).usesDriverIndexes;
    const { filter, update } = compareAndSetWrite(change, this.guard, stamped, pendingKey);
    try {
      const result = await documentLock.run(this.name, change.id, () => this.collection.updateOne(filter, update));
      if (result.modifiedCount !== 1) return false;
    } catch (error) {
      if (isLostCompareAndSet(error)) return false;
      throw error;
    }
    // The relay reads the key the change was written under, however long the write took.
    if (change.outbox.length > 0) announcePending(this.db, this.name, { changedUnder: pendingKey });
    return true;
  }

  /** Hands the relay the documents just inserted with entries, as stored (`whenPending`). */
  private announceInserted(stored: readonly InsertedPending[]): void {
    const inserted = stored.filter(({ outbox }) => outbox.length > 0);
    if (inserted.length > 0) announcePending(this.db, this.name, { inserted });
  }

  /**
   * A batch of compare-and-sets (see `serverLimits`); for each, whether it was stored, or why
   * the store refused that one document (docs/api.md: it fails alone). A transient failure
   * (`isTransient`) fails the batch.
   */
  async compareAndSetMany(changes: readonly StoredChange[]): Promise<Array<boolean | WriteFailed>> {
    const { updateConcurrency } = await serverLimits(this.db);
    return pLimit(updateConcurrency).map(changes, async (change) => {
      try {
        return await this.compareAndSet(change);
      } catch (error) {
        if (isTransient(error)) throw error;
        return new WriteFailed(error);
      }
    });
  }
}

/**
 * The `updateOne` of a compare-and-set: its filter (the document at one of the generations the
 * change may find, and `guard`), and its update with the change's outbox, pending under
 * `pendingKey` (by default, now's); `stamped`, with the stamp FerretDB's guard checks (`CAS_FIELD`).
 */
export function compareAndSetWrite(
  change: StoredChange,
  guard: Record<string, unknown>,
  stamped: boolean,
  pendingKey?: number,
) {
  const generations = change.orStoredAt === undefined ? [change.generation] : [change.generation, change.orStoredAt];
  const stamp = stamped ? { [CAS_FIELD]: { from: generations, token: randomUUID() } } : {};
  return {
    filter: {
      ...guard,
      _id: change.id,
      generation: generations.length === 1 ? generations[0] : { $in: generations },
    } as never,
    update: setWithOutbox({ ...change.set, ...stamp }, change.outbox, pendingKey),
  };
}

/**
 * A write FerretDB's guard refused because the document changed after FerretDB read it
 * (deploy/local/ferretdb-compare-and-set.sql): for a compare-and-set, another writer won.
 */
export const isLostCompareAndSet = (error: unknown): boolean =>
  error instanceof Error && error.message.includes('rs: compare-and-set lost');

/** Where a document is set aside (see `OutboxStore.setAside`); entities leave it out. */
export interface SetAsideField {
  generation?: number;
  setAside?: { generation: number; reason: string; at: Date };
}

/** What an `OutboxStore` is made of, beside its model. */
export interface OutboxStoreOptions<Doc, Entity> {
  /**
   * The flag that marks a document a tombstone (`removed`, `deleted`): a live document does
   * not carry it, and every write requires that unless `writesRevive`.
   */
  tombstone?: string;
  /** Writes may also change a tombstone (an upsert brings it back). */
  writesRevive?: boolean;
  toEntity: (doc: Doc) => Entity;
  /** The collection's queries and their indexes (`declareIndexes`). */
  indexes: CollectionIndexes;
}

const HIDDEN_FIELDS = { ...OUTBOX_PROJECTION, ...LISTING_PROJECTION };

/**
 * The one base of every service's store over documents with an outbox: the mongoose model, the
 * one write mechanism (`documents`), the migration, and reads of live documents (not
 * tombstones), without their pending events, one or a batch at a time. A store of documents
 * that belong to a user adds their lists (`UserLists`).
 */
export abstract class OutboxStore<Doc extends { _id: string }, Entity> {
  readonly model: Model<Doc>;
  protected readonly documents: OutboxCollection;
  private readonly unset: UnsetFields;

  constructor(
    db: Connection,
    modelName: string,
    schema: Schema<Doc>,
    private readonly options: OutboxStoreOptions<Doc, Entity>,
  ) {
    this.model = db.model<Doc>(modelName, schema);
    this.liveCondition = options.tombstone === undefined ? {} : { [options.tombstone]: { $ne: true } };
    this.unset = unsetFieldsOf(schema);
    this.documents = new OutboxCollection(
      db.db!,
      this.model.collection.collectionName,
      options.writesRevive ? {} : this.liveCondition,
      this.unset,
    );
  }

  /** The entity of a document as read: every read of the store goes through it (its unset fields restored). */
  protected readonly toEntity = (doc: Doc): Entity => this.options.toEntity(this.unset.restored(doc));

  /** The condition every live document meets: not a tombstone. */
  protected readonly liveCondition: Record<string, unknown>;

  /** Reads leave out the outbox (it is the relay's) and where a document stands in lists. */
  protected get hiddenFields(): Record<string, 0> {
    return HIDDEN_FIELDS;
  }

  /** The collection's migration: its indexes, declared (creating one that exists costs nothing). */
  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.model.db.db!, this.options.indexes);
  }

  /**
   * A page of the live documents of one bucket matching `conditions`, in id order after the id
   * `page.after`, for another service's rebuild (docs/operations.md: served by the index on `bucket`
   * and `_id`; a reader holds a page, never a bucket): but those set aside at their current
   * generation (`setAside`). `lastId` is the last id read when the page was full.
   */
  protected async inBucket(
    bucket: number,
    page: { after: string | undefined; limit: number },
    conditions: Record<string, unknown> = {},
    /** Those set aside too (a reader that does not batch commands: the entitlement projection). */
    withSetAside = false,
  ): Promise<{ items: Entity[]; lastId: string | null }> {
    const docs = await this.model
      .find({ ...conditions, bucket, ...afterId(page.after), ...this.liveCondition } as never, this.hiddenFields)
      .sort({ _id: 1 })
      .limit(page.limit)
      .lean<Array<Doc & SetAsideField>>();
    return {
      items: docs.filter((doc) => withSetAside || doc.setAside?.generation !== doc.generation).map(this.toEntity),
      lastId: docs.length === page.limit ? docs.at(-1)!._id : null,
    };
  }

  /**
   * docs/api.md: a document whose batch command failed on its own is set aside at the
   * generation it was read at: `inBucket` (the scheduler's rebuild) leaves it out, so it never
   * joins a batch with others again, until a change moves it past that generation.
   */
  async setAside(id: string, generation: number, reason: string): Promise<void> {
    await this.model.collection.updateOne({ _id: id, generation } as never, {
      $set: { setAside: { generation, reason, at: new Date() } },
    });
  }

  /** The live document `id` if it has the `owner` fields (e.g. its user): see `findDocument`. */
  protected async findLive(id: string, owner: Record<string, string> = {}): Promise<Entity | null> {
    const doc = await this.findLiveDocument(id, owner);
    return doc ? this.toEntity(doc) : null;
  }

  /** `findLive` as stored, for a store that reads its documents its own way. */
  protected async findLiveDocument(id: string, owner: Record<string, string> = {}): Promise<Doc | null> {
    const doc = await this.findDocument(id, owner);
    return doc && this.isLive(doc) ? doc : null;
  }

  /**
   * The document `id`, live or a tombstone, if it has the `owner` fields. Read by its id alone,
   * the owner checked here: on FerretDB a second equality (the user's) makes PostgreSQL
   * intersect the id's index entry with every entry of that user, so a read would cost what the
   * user holds (docs/decisions/0049).
   */
  protected async findDocument(id: string, owner: Record<string, string> = {}): Promise<Doc | null> {
    // The driver's own read: a point read needs none of mongoose's query building (the hot path
    // of every retrieve; docs/performance.md).
    const doc = (await this.model.collection.findOne({ _id: id } as never, {
      projection: this.hiddenFields,
    })) as Doc | null;
    if (!doc) return null;
    const fields = doc as unknown as Record<string, unknown>;
    return Object.entries(owner).every(([field, value]) => fields[field] === value) ? doc : null;
  }

  /** Whether `doc` is live: not a tombstone. */
  protected isLive(doc: Doc): boolean {
    return this.options.tombstone === undefined || (doc as Record<string, unknown>)[this.options.tombstone] !== true;
  }
}
