import { LRUCache } from 'lru-cache';
import pLimit from 'p-limit';
import type { mongo } from 'mongoose';
import { BY_ID, type CollectionIndexes, type IndexedQuery } from './indexes';
import { WriteFailed } from './items';

/**
 * Lists read a page through an index on every server (docs/decisions/0049). A document is
 * placed in each list it appears in (a user's rights, those of one of the user's grantors…) as
 * it is stored: it takes the next position of that list, kept by a counter per owner, and is
 * found under the list's block of `LIST_BLOCK` positions. A page reads block after block,
 * newest first, each by one equality (what FerretDB's index serves), until it is full.
 */

/** Positions per block: a page of `limit` items reads about `limit / LIST_BLOCK + 1` blocks. */
export const LIST_BLOCK = 32;

/** Blocks read at once while a page fills. */
const BLOCKS_AT_ONCE = 8;

/**
 * Positions a counter write reserves in each list it writes (more when a placement needs more):
 * a process placing one document of an owner after another writes the owner's counter once in
 * as many.
 */
const RESERVED_AHEAD = LIST_BLOCK;

/**
 * A list whose reservation ran out within this time of being made reserves twice as many the
 * next time, up to `MOST_RESERVED_AHEAD` (decision 0069): a busy list (the audit log's, a user
 * receiving rights by the thousand) writes its counter about once a second, not once in 32.
 */
const QUICKLY_USED_MS = 1_000;
const MOST_RESERVED_AHEAD = 32 * LIST_BLOCK;

/**
 * How long after this process last saw an owner's counter at the generation it wrote it takes
 * positions from its reservation without reading the counter again: documents another process
 * places for the same owner within this time may be listed in either order (decision 0062).
 */
const TRUSTED_FOR_MS = 10_000;

/** After how many placements a process that found the owners it did not know existing tries making counters together again. */
const RETRY_MAKING_AFTER = 64;

/** Counter reads and writes under way at once in a process (FerretDB's updates run on a bounded pool). */
const COUNTER_CALLS_AT_ONCE = 16;

/** Where an item stands in a list: its position (newest highest), and its id for ties. */
export interface ListPosition {
  position: number;
  id: string;
}

/** What a listed document carries. */
export interface ListedFields {
  /** Its position in each list it appears in, by the list's name. */
  listed: Record<string, number>;
  /** The blocks it is found under (`blockKey`): the one field lists are read by. */
  listBlocks: string[];
}

/** A page of a list, and where its last item stands (null when it is empty). */
export interface ListPage<T> {
  items: T[];
  last: ListPosition | null;
}

/**
 * The name of a list within its owner: its kind and the parties it is of, e.g. `g|acme`.
 * Parties are tokens without `|` or `~`; a `.` is written `~`, so a name is a field name.
 */
export const listName = (kind: string, ...parties: string[]): string =>
  [kind, ...parties].join('|').replaceAll('.', '~');

const blockKey = (owner: string, name: string, block: number) => `${owner}|${name}|${block}`;

/** Fields of a listed document that a read of one document leaves out. */
export const LISTING_PROJECTION = { listed: 0, listBlocks: 0 } as const;

/** The queries of a listed collection: a block of a list (`by_list_block`). */
export const LIST_BLOCKS: IndexedQuery = {
  query: `a block of ${LIST_BLOCK} positions of a list (a page of a list, newest first)`,
  mongodb: [{ key: { listBlocks: 1 }, name: 'by_list_block' }],
  ferretdb: ['listBlocks'],
};

/** The counters of a listed collection's lists: one document per owner, read and changed by `_id`. */
export const listCounterIndexes = (collection: string): CollectionIndexes => ({
  collection: listCountersOf(collection),
  queries: [BY_ID],
});

/** The collection that keeps the counters of `collection`'s lists. */
export const listCountersOf = (collection: string) => `${collection}_lists`;

/**
 * How counters are written: each owner's counter a document with a `generation`, changed
 * only by compare-and-set on it (an `OutboxCollection`, without events). An increment would do
 * on MongoDB; FerretDB 1.x reads and rewrites a document to update it, so two increments at
 * once could both take the same positions and leave the counter below one of them.
 */
export interface CounterWrites {
  readonly collection: mongo.Collection;
  insertEach(docs: ReadonlyArray<{ doc: { _id: string }; outbox: [] }>): Promise<Array<boolean | WriteFailed>>;
  compareAndSet(change: { id: string; generation: number; set: object; outbox: [] }): Promise<boolean>;
}

/** The lists of one collection: their counters, and pages read from the collection. */
export class Lists {
  /** Placements waiting for the counter write of their owner under way, by owner. */
  private readonly waiting = new Map<string, WaitingPlacement[]>();
  /** Owners whose placements are being written by this process. */
  private readonly taking = new Set<string>();
  /** Positions this process reserved ahead in each owner's lists, by owner. */
  private readonly reserved = new LRUCache<string, Reservation>({ max: 50_000 });
  /** Bounds the counter reads and writes under way at once. */
  private readonly counterCalls = pLimit(COUNTER_CALLS_AT_ONCE);
  /** Of the owners this process last tried to make counters for together, the share that were new. */
  private newShare = 1;
  /** Placements since this process last tried making counters together. */
  private sinceTried = 0;

  /** `now`: the time in milliseconds, for the trust in a reservation (tests move it). */
  constructor(
    private readonly counters: CounterWrites,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Places documents in their lists: each takes the next position of every list `listsOf`
   * names, in the order given, from this process's reservation or one counter write per owner
   * (decision 0062). A position taken by a document that is then not stored (its id was taken)
   * stays empty.
   */
  async place<D>(
    docs: readonly D[],
    listsOf: (doc: D) => { owner: string; names: readonly string[] },
  ): Promise<Array<D & ListedFields>> {
    const byOwner = new Map<string, Array<{ index: number; names: readonly string[] }>>();
    docs.forEach((doc, index) => {
      const { owner, names } = listsOf(doc);
      const members = byOwner.get(owner) ?? [];
      members.push({ index, names });
      byOwner.set(owner, members);
    });
    const counts = new Map(
      [...byOwner].map(([owner, members]) => {
        const ofOwner: Record<string, number> = {};
        for (const { names } of members) for (const name of names) ofOwner[name] = (ofOwner[name] ?? 0) + 1;
        return [owner, ofOwner];
      }),
    );
    const firsts = await this.takeAll(counts);
    const placed: Array<D & ListedFields> = [];
    for (const [owner, members] of byOwner) {
      const next = firsts.get(owner)!;
      for (const { index, names } of members) {
        const listed: Record<string, number> = {};
        for (const name of names) listed[name] = next[name]!++;
        placed[index] = {
          ...docs[index]!,
          listed,
          listBlocks: names.map((name) => blockKey(owner, name, Math.floor(listed[name]! / LIST_BLOCK))),
        };
      }
    }
    return placed;
  }

  /**
   * A page of `owner`'s list `name`, newest first, after `after`: the documents of
   * `collection` matching `filter` (and `projection`), block after block from the list's
   * newest, until `limit` are found or the list ends.
   */
  async page<Doc extends { _id: string; listed?: Record<string, number> }>(
    collection: mongo.Collection,
    list: { owner: string; name: string },
    query: {
      filter: object;
      projection: object;
      after: ListPosition | null;
      limit: number;
      /**
       * Where a list kept in about time order may stop being read: once a block holds a
       * document for which it is true, no older block is read (a page "since" an instant).
       */
      until?: (doc: Doc) => boolean;
      /** A condition checked on each document read, beside `filter` (one the server cannot answer with the page). */
      keep?: (doc: Doc) => boolean;
    },
  ): Promise<ListPage<Doc>> {
    const { after, limit } = query;
    // A cursor is the caller's text: it never starts a page above the list's newest position.
    const newestTaken = await this.top(list.owner, list.name);
    const top = after ? Math.min(after.position, newestTaken) : newestTaken;
    const found: Array<{ doc: Doc; at: ListPosition }> = [];
    for (let block = Math.floor(top / LIST_BLOCK), newest = top; block >= 0 && found.length < limit;) {
      // As many blocks as the page still needs, the first of them holding positions up to `newest`.
      const inFirst = newest - block * LIST_BLOCK + 1;
      const needed = 1 + Math.ceil(Math.max(0, limit - found.length - inFirst) / LIST_BLOCK);
      const count = Math.min(BLOCKS_AT_ONCE, block + 1, needed);
      const blocks = Array.from({ length: count }, (_, i) => block - i);
      const read = await Promise.all(
        blocks.map(
          (at) =>
            collection
              .find(
                { listBlocks: blockKey(list.owner, list.name, at), ...query.filter },
                { projection: query.projection },
              )
              .toArray() as unknown as Promise<Doc[]>,
        ),
      );
      let reachedEnd = false;
      for (const doc of read.flat()) {
        if (query.until?.(doc)) reachedEnd = true;
        if (query.keep && !query.keep(doc)) continue;
        const position = doc.listed?.[list.name];
        if (position === undefined) continue;
        const at = { position, id: doc._id };
        if (!after || isOlder(at, after)) found.push({ doc, at });
      }
      if (reachedEnd) break;
      block -= count;
      newest = block * LIST_BLOCK + LIST_BLOCK - 1;
    }
    // Blocks are read newest first, so what is left unread stands after every item found.
    const page = found.sort((a, b) => (isOlder(a.at, b.at) ? 1 : -1)).slice(0, limit);
    return { items: page.map(({ doc }) => doc), last: page.at(-1)?.at ?? null };
  }

  /**
   * Takes `counts` positions in each named list of each owner; the first position taken in each.
   * Placements of one owner in this process wait for the one under way and then take their
   * positions together, from one reservation or counter write: a grantor creating many rights
   * of one user at once costs a few counter writes, not one each, and never races itself.
   * Owners this process holds nothing of may be new (a burst of new users' first documents): while
   * most such owners have been, their counters are made together, by one insert for them all.
   */
  private async takeAll(counts: Map<string, Record<string, number>>): Promise<Map<string, Record<string, number>>> {
    const taken = [...counts].map(([owner, ofOwner]) => this.enqueue(owner, ofOwner));
    const starting = [...counts.keys()].filter((owner) => !this.taking.has(owner));
    for (const owner of starting) this.taking.add(owner);
    const unknown = starting.filter((owner) => !this.reserved.has(owner));
    this.sinceTried += 1;
    if (unknown.length > 0 && (this.newShare >= 0.5 || this.sinceTried >= RETRY_MAKING_AFTER)) {
      // A failure here leaves each owner to be read and written alone below.
      await this.makeCounters(unknown).catch(() => undefined);
    }
    for (const owner of starting) void this.takeWaiting(owner);
    const firsts = await Promise.all(taken);
    return new Map([...counts.keys()].map((owner, index) => [owner, firsts[index]!]));
  }

  /**
   * Inserts the counters of `owners`, with the positions their waiting placements need and
   * those reserved ahead: those that exist already are left to be read and written alone.
   */
  private async makeCounters(owners: readonly string[]): Promise<void> {
    const ranges = owners.map((owner) => {
      const need = totalOf(this.waiting.get(owner) ?? []);
      const now = this.now();
      return Object.fromEntries(Object.entries(need).map(([name, count]) => [name, reserve(0, count, undefined, now)]));
    });
    const made = await this.counters.insertEach(
      owners.map((owner, index) => ({
        doc: {
          _id: owner,
          generation: 1,
          ...Object.fromEntries(Object.entries(ranges[index]!).map(([name, { end }]) => [name, end])),
        } as { _id: string },
        outbox: [],
      })),
    );
    const checkedAt = this.now();
    made.forEach((stored, index) => {
      if (stored === true) this.reserved.set(owners[index]!, { generation: 1, checkedAt, ranges: ranges[index]! });
    });
    this.newShare = made.filter((stored) => stored === true).length / owners.length;
    this.sinceTried = 0;
  }

  /** A placement of `owner` waiting its turn; it starts no turn. */
  private enqueue(owner: string, counts: Record<string, number>): Promise<Record<string, number>> {
    return new Promise((resolve, reject) => {
      const waiting = this.waiting.get(owner) ?? [];
      waiting.push({ counts, resolve, reject });
      this.waiting.set(owner, waiting);
    });
  }

  private async takeWaiting(owner: string): Promise<void> {
    this.taking.add(owner);
    for (let waiting = this.waiting.get(owner); waiting; waiting = this.waiting.get(owner)) {
      this.waiting.delete(owner);
      try {
        // Each waiting placement gets the next positions, in the order it asked.
        const next = await this.takeTogether(owner, totalOf(waiting));
        for (const { counts, resolve } of waiting) {
          resolve(Object.fromEntries(Object.keys(counts).map((name) => [name, next[name]!])));
          for (const [name, count] of Object.entries(counts)) next[name]! += count;
        }
      } catch (error) {
        for (const { reject } of waiting) reject(error);
      }
    }
    this.taking.delete(owner);
  }

  /**
   * `counts` positions in each named list of `owner`; the first of each. They come from the
   * positions this process reserved ahead when it last wrote the owner's counter, as long as no
   * other process has written it since: checked by a read (where a write costs four statements
   * on FerretDB), or not at all within `TRUSTED_FOR_MS` of the last check. Otherwise one counter
   * write takes them, reserving at least `RESERVED_AHEAD`. The check keeps lists in the order documents
   * were placed whichever process placed them: once another process took positions above this
   * one's reservation, the reservation is left (its positions stay empty).
   */
  private async takeTogether(owner: string, counts: Record<string, number>): Promise<Record<string, number>> {
    const held = this.reserved.get(owner);
    if (held && this.now() - held.checkedAt < TRUSTED_FOR_MS && fits(held.ranges, counts))
      return takeFrom(held.ranges, counts);
    return this.counterCalls(async () => {
      for (let counter = await this.read(owner); ; counter = await this.read(owner)) {
        const reservation = this.reserved.get(owner);
        const ranges = reservation && counter?.generation === reservation.generation ? reservation.ranges : {};
        if (reservation && ranges === reservation.ranges && fits(ranges, counts)) {
          reservation.checkedAt = this.now();
          return takeFrom(ranges, counts);
        }
        const next: Record<string, PositionRange> = { ...ranges };
        for (const [name, count] of Object.entries(counts)) {
          if (roomIn(ranges[name]) >= count) continue;
          // A reservation this process still holds goes on where it ends; others start at the counter.
          const start = ranges[name]?.next ?? Number(counter?.[name] ?? 0);
          next[name] = reserve(start, count, ranges[name], this.now());
        }
        const set = Object.fromEntries(
          Object.entries(next)
            .filter(([name, range]) => range !== ranges[name])
            .map(([name, range]) => [name, range.end]),
        );
        const generation = (counter?.generation ?? 0) + 1;
        const stored = counter
          ? await this.counters.compareAndSet({
              id: owner,
              generation: counter.generation,
              set: { ...set, generation },
              outbox: [],
            })
          : (
              await this.counters.insertEach([
                { doc: { _id: owner, generation, ...set } as { _id: string }, outbox: [] },
              ])
            )[0]!;
        if (stored instanceof WriteFailed) throw stored.error;
        if (stored) {
          this.reserved.set(owner, { generation, checkedAt: this.now(), ranges: next });
          return takeFrom(next, counts);
        }
        // Another process wrote the counter since it was read: read it again.
      }
    });
  }

  private async read(owner: string): Promise<Counter | null> {
    return (await this.counters.collection.findOne({ _id: owner } as never)) as Counter | null;
  }

  /** The newest position taken in a list (-1 when none). */
  private async top(owner: string, name: string): Promise<number> {
    const counter = await this.read(owner);
    return Number(counter?.[name] ?? 0) - 1;
  }
}

/** A placement waiting for the counter write it will share. */
interface WaitingPlacement {
  counts: Record<string, number>;
  resolve: (first: Record<string, number>) => void;
  reject: (error: unknown) => void;
}

/** An owner's counter: the positions taken in each of its lists, and its generation. */
type Counter = { _id: string; generation: number } & Record<string, unknown>;

/**
 * Positions reserved in one list: `next` is the first not yet taken, `end` the first beyond;
 * reserved at `at` (ms), `ahead` beyond what the placement that made it needed.
 */
interface PositionRange {
  next: number;
  end: number;
  at: number;
  ahead: number;
}

/**
 * What this process reserved in an owner's lists with the counter write of `generation`, and
 * when it last saw the counter at that generation.
 */
interface Reservation {
  generation: number;
  checkedAt: number;
  ranges: Record<string, PositionRange>;
}

/** Whether `ranges` have room for `counts` positions in each list. */
const fits = (ranges: Record<string, PositionRange>, counts: Record<string, number>): boolean =>
  Object.entries(counts).every(([name, count]) => roomIn(ranges[name]) >= count);

/** The positions waiting placements need together, by list. */
function totalOf(waiting: readonly WaitingPlacement[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const { counts } of waiting)
    for (const [name, count] of Object.entries(counts)) total[name] = (total[name] ?? 0) + count;
  return total;
}

/**
 * The positions a counter write reserves from `start` for a placement of `count` at `now`:
 * `RESERVED_AHEAD` at least, twice the `previous` reservation's when that was used up quickly.
 */
function reserve(start: number, count: number, previous: PositionRange | undefined, now: number): PositionRange {
  const ahead =
    previous && now - previous.at < QUICKLY_USED_MS
      ? Math.min(previous.ahead * 2, MOST_RESERVED_AHEAD)
      : RESERVED_AHEAD;
  return { next: start, end: start + Math.max(count, ahead), at: now, ahead };
}

/** How many positions are left in a range (none when there is no range). */
const roomIn = (range: PositionRange | undefined): number => (range ? range.end - range.next : 0);

/** Takes `counts` positions from `ranges`, each of which has room for them; the first of each. */
function takeFrom(ranges: Record<string, PositionRange>, counts: Record<string, number>): Record<string, number> {
  const taken: Record<string, number> = {};
  for (const [name, count] of Object.entries(counts)) {
    const range = ranges[name]!;
    taken[name] = range.next;
    range.next += count;
  }
  return taken;
}

/** Whether the item at `a` comes after (is older than) the one at `b` in a newest-first list. */
const isOlder = (a: ListPosition, b: ListPosition): boolean =>
  a.position < b.position || (a.position === b.position && a.id < b.id);
