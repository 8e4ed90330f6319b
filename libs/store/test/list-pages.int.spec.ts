import { testDatabase, type TestDatabase } from '@rs/testing';
import mongoose, { type mongo } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIST_BLOCK, listName, listsOfCollection, type Lists, type ListPosition } from '../src/index';

// docs/decisions/0049: a page of a list reads that page (and at most a block or two beside it),
// whatever the length of the list and of the owner's other lists. What a read costs is counted
// as the documents the server sends back, seen by the driver's command monitoring.

const LONG = 10_000;
const ALL = listName('all');
const OF_A = listName('g', 'grantor.a');
const OF_B = listName('g', 'grantor.b');

interface Item {
  _id: string;
  owner: string;
  grantor: string;
  n: number;
}

let database: TestDatabase;
let monitored: mongoose.Connection;
let returned = 0;

/**
 * `count` items of `owner`, numbered from `from`, every other one of grantor a, placed in their
 * lists (by `lists`, a process of its own unless given) and stored.
 */
async function store(
  db: mongo.Db,
  owner: string,
  from: number,
  count: number,
  lists: Lists = listsOfCollection(db, 'items'),
): Promise<void> {
  const items: Item[] = Array.from({ length: count }, (_, i) => ({
    _id: `${owner}-${String(from + i).padStart(6, '0')}`,
    owner,
    grantor: (from + i) % 2 === 0 ? 'grantor.a' : 'grantor.b',
    n: from + i,
  }));
  const placed = await lists.place(items, (item) => ({
    owner: item.owner,
    names: [ALL, listName('g', item.grantor)],
  }));
  await db.collection('items').insertMany(placed as never[]);
}

beforeAll(async () => {
  database = await testDatabase('list_pages');
  const db = database.db.db!;
  await db.collection('items').createIndex({ listBlocks: 1 });
  for (let at = 0; at < LONG; at += 1_000) await store(db, 'long', at, 1_000);
  await store(db, 'short', 0, 1);
  // The same database through a connection that counts what the server returns.
  monitored = mongoose.createConnection(process.env.MONGODB_URL!, {
    dbName: db.databaseName,
    monitorCommands: true,
  });
  await monitored.asPromise();
  monitored.getClient().on('commandSucceeded', (event: mongo.CommandSucceededEvent) => {
    const cursor = (event.reply as { cursor?: { firstBatch?: unknown[]; nextBatch?: unknown[] } }).cursor;
    returned += (cursor?.firstBatch ?? cursor?.nextBatch ?? []).length;
  });
}, 180_000);
afterAll(async () => {
  await monitored?.close();
  await database?.drop();
});

/** A page of `owner`'s list `name` (and of grantor a's items, when asked), and how many documents the server returned for it. */
async function read(
  owner: string,
  name: string,
  after: ListPosition | null,
  limit: number,
  filter: object = {},
): Promise<{ ns: number[]; last: ListPosition | null; returned: number }> {
  const lists = listsOfCollection(monitored.db!, 'items');
  returned = 0;
  const page = await lists.page<Item>(
    monitored.db!.collection('items'),
    { owner, name },
    { filter, projection: { listBlocks: 0 }, after, limit },
  );
  return { ns: page.items.map((item) => item.n), last: page.last, returned };
}

/** Every page of a list, `limit` at a time: each page's returned count, and the items in order. */
async function walk(owner: string, name: string, limit: number) {
  const ns: number[] = [];
  const costs: number[] = [];
  let after: ListPosition | null = null;
  for (;;) {
    const page = await read(owner, name, after, limit);
    if (page.ns.length === 0) break;
    costs.push(page.returned);
    ns.push(...page.ns);
    after = page.last;
  }
  return { ns, costs };
}

describe('a page of a list reads that page', () => {
  it('when the newest item of a 10,000-item list is read, then about one block is read, as for a list of one', async () => {
    const short = await read('short', ALL, null, 1);
    expect(short.ns).toEqual([0]);
    const first = await read('long', ALL, null, 1);
    expect(first.ns).toEqual([LONG - 1]);
    // A block, and the list's counter.
    expect(first.returned).toBeLessThanOrEqual(LIST_BLOCK + 1);
  });

  it('when pages of 1,000 are read one after the other, then together they are the whole list once, newest first, each reading about its own size', async () => {
    const { ns, costs } = await walk('long', ALL, 1_000);
    expect(ns).toEqual(Array.from({ length: LONG }, (_, i) => LONG - 1 - i));
    for (const cost of costs) expect(cost).toBeLessThanOrEqual(1_000 + 2 * LIST_BLOCK + 1);
  });

  it("when one grantor's list is read, then the owner's items of another grantor cost it nothing", async () => {
    const first = await read('long', OF_A, null, 100);
    expect(first.ns).toEqual(Array.from({ length: 100 }, (_, i) => LONG - 2 - 2 * i));
    expect(first.returned).toBeLessThanOrEqual(100 + 2 * LIST_BLOCK + 1);
    const { ns } = await walk('long', OF_B, 700);
    expect(ns).toEqual(Array.from({ length: LONG / 2 }, (_, i) => LONG - 1 - 2 * i));
  });

  it('when a page starts deep in the list, then it reads from where the previous one ended', async () => {
    const previous = await read('long', ALL, null, 8_000);
    const deep = await read('long', ALL, previous.last, 3);
    expect(deep.ns).toEqual([1_999, 1_998, 1_997]);
    expect(deep.returned).toBeLessThanOrEqual(2 * LIST_BLOCK + 1);
  });

  it('when a cursor names a position beyond the list, then the page starts at its newest, reading one block', async () => {
    const beyond = await read('long', ALL, { position: 999_999_999_999_999, id: 'z' }, 3);
    expect(beyond.ns).toEqual([LONG - 1, LONG - 2, LONG - 3]);
    expect(beyond.returned).toBeLessThanOrEqual(LIST_BLOCK + 1);
  });

  it('when conditions filter a page, then it holds the matching items only, newest first', async () => {
    const page = await read('long', ALL, null, 5, { n: { $lt: 3 } });
    expect(page.ns).toEqual([2, 1, 0]);
  });

  it('when items of one owner are placed concurrently, then each is listed once and the list reads whole', async () => {
    const db = database.db.db!;
    await Promise.all(Array.from({ length: 40 }, (_, batch) => store(db, 'racing', batch * 5, 5)));
    const { ns } = await walk('racing', ALL, 30);
    expect(ns.toSorted((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("when one process places an owner's items one after another, then it writes the owner's counter once in a block of them", async () => {
    const db = database.db.db!;
    const lists = listsOfCollection(db, 'items');
    for (let n = 0; n < 2 * LIST_BLOCK; n += 1) await store(db, 'one-by-one', n, 1, lists);
    const counter = await db.collection('items_lists').findOne({ _id: 'one-by-one' as never });
    // Grantor a's list and the list of all begun with the first item, grantor b's with the
    // second, the list of all reserved again at its 33rd: three writes, not 64.
    expect(counter?.generation).toBe(3);
    const { ns } = await walk('one-by-one', ALL, 10);
    expect(ns).toEqual(Array.from({ length: 2 * LIST_BLOCK }, (_, i) => 2 * LIST_BLOCK - 1 - i));
  });

  it("when one process places an owner's items quickly, then each reservation is twice the last, and a block again after a pause", async () => {
    const db = database.db.db!;
    let now = Date.now();
    const lists = listsOfCollection(db, 'items', () => now);
    const reservedInAll = async () =>
      (await db.collection('items_lists').findOne({ _id: 'busy' as never }))?.[ALL] as number;
    for (let n = 0; n < 100; n += 1) await store(db, 'busy', n, 1, lists);
    // Used up within a second each: 32, then 64, then 128 positions.
    expect(await reservedInAll()).toBe(LIST_BLOCK * (1 + 2 + 4));
    now += 5_000;
    for (let n = 100; n < 228; n += 1) await store(db, 'busy', n, 1, lists);
    // The reservation of 128 lasted seconds: the next is a block.
    expect(await reservedInAll()).toBe(LIST_BLOCK * (1 + 2 + 4 + 1));
    const { ns } = await walk('busy', ALL, 50);
    expect(ns).toEqual(Array.from({ length: 228 }, (_, i) => 227 - i));
  });

  it("when two processes place an owner's items in turn, seconds apart, then the list is in the order they were placed", async () => {
    const db = database.db.db!;
    let now = Date.now();
    const processes = [listsOfCollection(db, 'items', () => now), listsOfCollection(db, 'items', () => now)];
    for (let n = 0; n < 12; n += 1) {
      now += 60_000;
      await store(db, 'in-turn', n, 1, processes[n % 2]);
    }
    const { ns } = await walk('in-turn', ALL, 5);
    expect(ns).toEqual(Array.from({ length: 12 }, (_, i) => 11 - i));
  });

  it('when one batch places the first items of many owners, some placed before by another process, then each list reads whole', async () => {
    const db = database.db.db!;
    const owners = Array.from({ length: 60 }, (_, i) => `many-${i}`);
    await Promise.all(owners.filter((_, i) => i % 3 === 0).map((owner) => store(db, owner, 0, 2)));
    const items = owners.flatMap((owner, i) =>
      [2, 3].map((n) => ({ _id: `${owner}-${n}`, owner, grantor: 'grantor.a', n: i % 3 === 0 ? n : n - 2 })),
    );
    const placed = await listsOfCollection(db, 'items').place(items, (item) => ({ owner: item.owner, names: [ALL] }));
    await db.collection('items').insertMany(placed as never[]);
    for (const [i, owner] of owners.entries()) {
      const { ns } = await walk(owner, ALL, 10);
      expect(ns, owner).toEqual(i % 3 === 0 ? [3, 2, 1, 0] : [1, 0]);
    }
    const counters = await db
      .collection('items_lists')
      .find({ _id: { $in: owners } as never })
      .toArray();
    expect(counters.filter((counter) => counter.generation === 1)).toHaveLength(40);
  });
});
