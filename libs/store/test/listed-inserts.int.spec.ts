import { monitoredConnection, testDatabase, type TestDatabase } from '@rs/testing';
import mongoose, { type mongo } from 'mongoose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createCloudEvent } from '@rs/contracts';
import { ListedInserts, listName, OutboxCollection, outboxEntry, UserLists, type OutboxEntry } from '../src/index';

// docs/decisions/0073: creations under way at once are placed in their lists and inserted
// together. What the server was asked is seen by the driver's command monitoring.

const ALL = listName('all');

interface Item {
  _id: string;
  userId: string;
  n: number;
}

let database: TestDatabase;
let monitored: mongoose.Connection;
/** Insert commands the server was sent, by collection. */
let inserts: Record<string, number> = {};

const event = (subject: string): OutboxEntry =>
  outboxEntry('items.events', createCloudEvent({ source: '/test', type: 'item.created', subject, data: { subject } }));

/** A fresh store of items (a process of its own), on the monitored connection. */
function items(name: string): { inserts: ListedInserts<Item>; lists: UserLists<Item>; collection: mongo.Collection } {
  const db = monitored.db!;
  const lists = new UserLists<Item>(db, db.collection(name), () => [ALL]);
  return { inserts: new ListedInserts(lists, new OutboxCollection(db, name)), lists, collection: db.collection(name) };
}

beforeAll(async () => {
  database = await testDatabase('listed_inserts');
  monitored = await monitoredConnection(database);
  monitored.getClient().on('commandStarted', (started: mongo.CommandStartedEvent) => {
    if (started.commandName !== 'insert') return;
    const collection = String(started.command.insert);
    inserts[collection] = (inserts[collection] ?? 0) + 1;
  });
}, 60_000);
afterAll(async () => {
  await monitored?.close();
  await database?.drop();
});
beforeEach(() => {
  inserts = {};
});

describe('creations inserted together', () => {
  it('stores creations made at once with few inserts, each in its lists in the order it was made', async () => {
    const { inserts: store, lists, collection } = items('together');
    const made = Array.from({ length: 40 }, (_, n) => ({ _id: `item-${n}`, userId: `user-${n % 20}`, n }));

    const stored = await Promise.all(made.map((item) => store.insert(item, [event(item._id)])));

    expect(stored.every((outcome) => outcome === true)).toBe(true);
    expect(await collection.countDocuments()).toBe(40);
    // One by one, 40 item inserts and 20 counter inserts; together, a few of each.
    expect(inserts.together).toBeLessThanOrEqual(4);
    expect(inserts.together_lists).toBeLessThanOrEqual(4);
    for (let user = 0; user < 20; user += 1) {
      const page = await lists.page(
        { userId: `user-${user}`, name: ALL },
        { conditions: [{}], after: null, limit: 10 },
      );
      expect(page.items.map(({ n }) => n)).toEqual([user + 20, user]);
    }
    const pending = await collection.countDocuments({ 'outbox.0.id': { $exists: true } });
    expect(pending).toBe(40);
  });

  it('stores one of two creations of the same id made at once, and tells the other its id is taken', async () => {
    const { inserts: store, collection } = items('same_id');
    const outcomes = await Promise.all([
      store.insert({ _id: 'twice', userId: 'user-a', n: 1 }, [event('first')]),
      store.insert({ _id: 'twice', userId: 'user-a', n: 2 }, [event('second')]),
      store.insert({ _id: 'other', userId: 'user-b', n: 3 }, [event('other')]),
    ]);

    expect(outcomes.filter((outcome) => outcome === true)).toHaveLength(2);
    expect(outcomes.slice(0, 2).sort()).toEqual([false, true]);
    expect(await collection.countDocuments({ _id: 'twice' } as never)).toBe(1);
  });

  it('fails a creation the server refuses alone, storing the others made with it', async () => {
    const { inserts: store, collection } = items('refused');
    const good = (n: number) => store.insert({ _id: `good-${n}`, userId: 'user-a', n }, [event(`good-${n}`)]);
    const bad = store.insert({ _id: 'bad', userId: 'user-a', n: 0, $bad: true } as Item, [event('bad')]);

    const outcomes = await Promise.allSettled([good(1), bad, good(2)]);

    expect(outcomes.map(({ status }) => status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ message: expect.stringContaining('$bad') });
    expect(await collection.countDocuments()).toBe(2);
  });
});
