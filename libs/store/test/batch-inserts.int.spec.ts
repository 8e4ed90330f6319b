import { createCloudEvent } from '@rs/contracts';
import { monitoredConnection, testDatabase, type TestDatabase } from '@rs/testing';
import mongoose, { type mongo } from 'mongoose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HistoryLog, OutboxCollection, serverLimits } from '../src/index';

// A batch larger than one insert call (a renewal's rights, their history) is stored by a few
// calls under way at once (`inChunks`, docs/decisions/0076): every document once, each
// outcome where its document was in the batch. What the server was asked is seen by the
// driver's command monitoring.

let database: TestDatabase;
let monitored: mongoose.Connection;
/** Insert commands of the test's collections: how many, how many at once at most, the documents of each. */
let calls: { started: number; inFlight: number; mostAtOnce: number; sizes: number[] };

const BATCH = 1_100;

beforeAll(async () => {
  database = await testDatabase('batch_inserts');
  monitored = await monitoredConnection(database);
  const client = monitored.getClient();
  const ours = new Set<number>();
  client.on('commandStarted', (started: mongo.CommandStartedEvent) => {
    if (started.commandName !== 'insert') return;
    ours.add(started.requestId);
    calls.started += 1;
    calls.inFlight += 1;
    calls.mostAtOnce = Math.max(calls.mostAtOnce, calls.inFlight);
    calls.sizes.push((started.command.documents as unknown[]).length);
  });
  const ended = (event: mongo.CommandSucceededEvent | mongo.CommandFailedEvent) => {
    if (ours.delete(event.requestId)) calls.inFlight -= 1;
  };
  client.on('commandSucceeded', ended);
  client.on('commandFailed', ended);
}, 60_000);
afterAll(async () => {
  await monitored?.close();
  await database?.drop();
});
beforeEach(() => {
  calls = { started: 0, inFlight: 0, mostAtOnce: 0, sizes: [] };
});

describe('a batch larger than one insert call', () => {
  it('stores every new document once, says which ids were taken where they stood, with calls under way at once', async () => {
    const db = monitored.db!;
    const documents = new OutboxCollection(db, 'items');
    // Ids taken before, in the first call's share and in the last one's.
    await documents.insertEach([{ doc: { _id: 'item-0003' }, outbox: [] }]);
    await documents.insertEach([{ doc: { _id: `item-${String(BATCH - 2).padStart(4, '0')}` }, outbox: [] }]);
    calls = { started: 0, inFlight: 0, mostAtOnce: 0, sizes: [] };
    const batch = Array.from({ length: BATCH }, (_, n) => ({
      doc: { _id: `item-${String(n).padStart(4, '0')}`, n },
      outbox: [],
    }));

    const outcomes = await documents.insertEach(batch);

    const taken = outcomes.flatMap((stored, index) => (stored === true ? [] : [index]));
    expect(taken).toEqual([3, BATCH - 2]);
    expect(await db.collection('items').countDocuments()).toBe(BATCH);
    const stored = await db.collection<{ _id: string; n?: number }>('items').find({ _id: 'item-0500' }).toArray();
    expect(stored.map((doc) => doc.n)).toEqual([500]);
    const { maxInsertDocuments, insertsAtOnce } = await serverLimits(db);
    expect(calls.started).toBe(Math.ceil(BATCH / maxInsertDocuments));
    expect(Math.max(...calls.sizes)).toBeLessThanOrEqual(maxInsertDocuments);
    expect(calls.mostAtOnce).toBeGreaterThan(1);
    expect(calls.mostAtOnce).toBeLessThanOrEqual(insertsAtOnce);
    // Again, as a repeated command would: nothing new, the count of what was new is none.
    expect(await documents.insertMany(batch)).toBe(0);
  });

  it('records a long batch of history once, however many calls it takes', async () => {
    const db = monitored.db!;
    const history = new HistoryLog(db, 'history', new Set(['thing.changed']), { kind: 'system', id: 'test' });
    await history.ensureIndexes();
    const events = Array.from({ length: BATCH }, (_, n) =>
      createCloudEvent({ source: '/test', type: 'thing.changed', subject: `thing-${n}`, data: { sequence: 1, n } }),
    );

    await history.record(events);
    await history.record(events.slice(0, 300));

    expect(await db.collection('history').countDocuments()).toBe(BATCH);
    expect(calls.mostAtOnce).toBeGreaterThan(1);
  });
});
