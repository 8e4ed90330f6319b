import type { mongo } from 'mongoose';
import { bucketPages, OutboxCollection } from './documents';
import { BY_ID, type CollectionIndexes, type IndexedQuery } from './indexes';
import { LIST_BLOCKS, listCountersOf, Lists, type ListedFields, type ListPage, type ListPosition } from './listing';
import { OUTBOX_PROJECTION, PENDING_EVENTS } from './outbox';
import type { OutboxEntry } from './outbox-entry';
import { GroupCommit } from './group-commit';
import { WriteFailed } from './items';

/** A page of a list reads where each document stands in it, not its outbox. */
const LISTED_PAGE_FIELDS = { ...OUTBOX_PROJECTION, listBlocks: 0 };

/**
 * The lists of `collection` (docs/decisions/0049, 0062), their counters kept beside it; `now`,
 * the time in milliseconds (tests move it).
 */
export const listsOfCollection = (db: mongo.Db, collection: string, now?: () => number): Lists =>
  new Lists(new OutboxCollection(db, listCountersOf(collection)), now);

/**
 * The queries of a collection of documents that belong to users: a document by id, a block of
 * one of a user's lists (`LIST_BLOCKS`), pending events, a bucket's pages for `pagedFor`; and `more`.
 */
export const userOwnedIndexes = (
  collection: string,
  options: { pagedFor: string; more?: readonly IndexedQuery[] },
): CollectionIndexes => ({
  collection,
  queries: [BY_ID, LIST_BLOCKS, ...(options.more ?? []), PENDING_EVENTS, bucketPages(options.pagedFor)],
});

/**
 * The lists of the documents that belong to users (docs/api.md: every right and subscription
 * lives under its user's path; docs/decisions/0049): the user's lists a document is placed in
 * when it is made (all of them, those of one grantor…), read a page at a time. A store of such
 * documents is made with it.
 */
export class UserLists<Doc extends { _id: string; userId: string }> {
  private readonly lists: Lists;

  constructor(
    db: mongo.Db,
    private readonly collection: mongo.Collection,
    /** The names (`listName`) of the user's lists a document appears in. */
    private readonly listsOf: (doc: Doc) => readonly string[],
  ) {
    this.lists = listsOfCollection(db, collection.collectionName);
  }

  /** New documents, each placed in its user's lists: what is inserted. */
  placed<D extends Doc>(docs: readonly D[]): Promise<Array<D & ListedFields>> {
    return this.lists.place(docs, (doc) => ({ owner: doc.userId, names: this.listsOf(doc) }));
  }

  /**
   * A page of the user's list `name`, newest first: its documents that meet every condition
   * (docs/api.md "Listing filters"), after `after`, as stored but their outbox.
   */
  async page(
    list: { userId: string; name: string },
    query: { conditions: readonly object[]; after: ListPosition | null; limit: number },
  ): Promise<ListPage<Doc>> {
    const page = await this.lists.page<Doc & Partial<ListedFields>>(
      this.collection,
      { owner: list.userId, name: list.name },
      { filter: { $and: query.conditions }, projection: LISTED_PAGE_FIELDS, after: query.after, limit: query.limit },
    );
    return { items: page.items.map(({ listed: _listed, ...doc }) => doc as unknown as Doc), last: page.last };
  }
}

/**
 * New documents created one by one (an API's creations), each placed in its user's lists and
 * stored with its events. Creations under way at once are placed and inserted together
 * (docs/decisions/0073): one placement (one counter insert for the owners that are new, a
 * counter write or read per other owner it must consult) and one `insertMany`, where each
 * creation alone cost its own insert and counter write, each a transaction on FerretDB.
 */
export class ListedInserts<Doc extends { _id: string; userId: string }> {
  private readonly together = new GroupCommit<{ doc: Doc; outbox: OutboxEntry[] }, boolean | WriteFailed>(
    (items) => this.write(items),
    INSERTED_TOGETHER,
  );

  constructor(
    private readonly lists: UserLists<Doc>,
    private readonly documents: OutboxCollection,
  ) {}

  /** Stores `doc` with its events; false when its id is taken (also as a tombstone). */
  async insert(doc: Doc, outbox: OutboxEntry[]): Promise<boolean> {
    const stored = await this.together.add({ doc, outbox });
    if (stored instanceof WriteFailed) throw stored.error;
    return stored;
  }

  private async write(
    items: ReadonlyArray<{ doc: Doc; outbox: OutboxEntry[] }>,
  ): Promise<Array<boolean | WriteFailed>> {
    const placed = await this.lists.placed(items.map(({ doc }) => doc));
    return this.documents.insertEach(placed.map((doc, index) => ({ doc, outbox: items[index]!.outbox })));
  }
}

/** The most creations one `insertMany` stores: FerretDB inserts rows a hundred at a time. */
const INSERTED_TOGETHER = 100;
