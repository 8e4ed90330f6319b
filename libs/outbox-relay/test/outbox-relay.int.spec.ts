import { randomBytes } from 'node:crypto';
import { createCloudEvent } from '@rs/contracts';
import { createLogger } from '@rs/logging';
import { AmqpClient } from '@rs/messaging';
import { EventCollector, RabbitAdmin, testDatabase, type TestDatabase, testName } from '@rs/testing';
import mongoose, { type mongo } from 'mongoose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  announcePending,
  HistoryLog,
  newOutbox,
  OutboxCollection,
  outboxEntry,
  PENDING_KEYS,
  pendingKeyAt,
  setWithOutbox,
} from '@rs/store';
import { OutboxRelay } from '../src/index';

// The outbox relay (docs/architecture.md) against the real database and broker, in this process
// (docs/decisions/0021): pending documents are read a key at a time.

const EXCHANGE = 'rights.events';
const vhost = testName('relay');
const rabbit = new RabbitAdmin(process.env.RABBITMQ_MANAGEMENT_URL!);
const logger = createLogger('relay-test', 'silent');
let database: TestDatabase;
let documents: mongo.Collection;
let client: AmqpClient;
let published: EventCollector;
let relay: OutboxRelay | undefined;

beforeAll(async () => {
  await rabbit.createVhost(vhost);
  const url = new URL(process.env.AMQP_URL!);
  url.pathname = `/${vhost}`;
  client = new AmqpClient({ url: url.toString(), connectionName: 'relay-test', logger });
  client.start();
  await client.waitUntilConnected(10_000);
  published = await EventCollector.start(url.toString(), EXCHANGE, '#');
  database = await testDatabase('outbox_relay');
  documents = database.db.db!.collection('things');
});
afterEach(async () => {
  await relay?.stop();
  relay = undefined;
});
afterAll(async () => {
  await published?.close();
  await client?.close();
  await database?.drop();
  await rabbit.deleteVhost(vhost);
});

const event = (subject: string) =>
  outboxEntry(EXCHANGE, createCloudEvent({ source: '/test', type: 'right.created', subject, data: { subject } }));

/** A document with one pending event, marked with `key` (a write at `at` marks it `pendingKeyAt(at)`). */
async function pendingDocument(id: string, key: number): Promise<void> {
  const { outbox } = newOutbox([event(id)]);
  await documents.insertOne({ _id: id, generation: 1, outbox, outboxPending: key } as never);
}

/**
 * Two keys, in the order a full pass reads them, that no write of the next half minute makes;
 * `adjacent`: the second is read right after the first.
 */
function keysFarFromNow({ adjacent = false } = {}): [number, number] {
  const soon = new Set(Array.from({ length: 40 }, (_, s) => pendingKeyAt(Date.now() + (s - 5) * 1000)));
  const far = Array.from({ length: PENDING_KEYS }, (_, i) => i + 1).filter((key) => !soon.has(key));
  const first = adjacent ? far.find((key) => far.includes(key + 1))! : far[0]!;
  return [first, adjacent ? first + 1 : far[1]!];
}

const startRelay = (
  fullPassMs: number,
  history?: HistoryLog,
  db = database.db.db!,
  pollIntervalMs = 100,
  batchSize?: number,
) => {
  relay = new OutboxRelay({
    db,
    collection: 'things',
    client,
    logger,
    pollIntervalMs,
    fullPassMs,
    history,
    ...(batchSize === undefined ? {} : { batchSize }),
  });
  relay.start();
  return relay;
};
const publishedSubjects = () => new Set(published.messages.map((message) => message.body.subject as string));
const pendingLeft = (ids: string[]) =>
  documents.countDocuments({ _id: { $in: ids }, outboxPending: { $ne: false } } as never);

describe('the outbox relay reads pending documents a key at a time', () => {
  it('when documents were made pending now, half a minute and a minute ago, then every event is published once and every document cleared', async () => {
    const now = Date.now();
    const ids = ['recent', 'a-minute-ago', 'half-a-minute-ago'].map(
      (name) => `${name}-${randomBytes(3).toString('hex')}`,
    );
    await pendingDocument(ids[0]!, pendingKeyAt(now));
    await pendingDocument(ids[1]!, pendingKeyAt(now - 60_000));
    await pendingDocument(ids[2]!, pendingKeyAt(now - 30_000));
    startRelay(500);
    await published.waitFor(() => ids.every((id) => publishedSubjects().has(id)));
    await expect.poll(() => pendingLeft(ids)).toBe(0);
    expect(published.messages.filter((message) => ids.includes(message.body.subject as string))).toHaveLength(3);
  });

  it('when a write kicks the relay, then its event goes out at once, while an older key waits for the next full pass', async () => {
    const [earlier, later] = keysFarFromNow();
    const [seen, old, fresh] = ['seen', 'old', 'fresh'].map((name) => `${name}-${randomBytes(3).toString('hex')}`);
    await pendingDocument(seen!, later);
    startRelay(60_000);
    // The pass at start has published `seen`, so it has read `earlier` already.
    await published.waitFor(() => publishedSubjects().has(seen!));
    await pendingDocument(old!, earlier);
    await pendingDocument(fresh!, pendingKeyAt(Date.now()));
    relay!.kick();
    await published.waitFor(() => publishedSubjects().has(fresh!));
    expect(publishedSubjects().has(old!)).toBe(false);
    relay!.kick('all');
    await published.waitFor(() => publishedSubjects().has(old!));
    await expect.poll(() => pendingLeft([seen!, old!, fresh!])).toBe(0);
  });

  it('when a write kicks the relay while a full pass is under way, then its event goes out before the rest of the pass', async () => {
    const [earlier, next] = keysFarFromNow({ adjacent: true });
    const [slow, behind, fresh] = ['slow', 'behind', 'fresh'].map(
      (name) => `${name}-${randomBytes(3).toString('hex')}`,
    );
    await pendingDocument(slow!, earlier);
    await pendingDocument(behind!, next);
    // The pass at start stops at `slow`'s batch (while its history is recorded) until released.
    const history = new HistoryLog(database.db.db!, 'things_history', new Set(['right.created']), {
      kind: 'system',
      id: 'test',
    });
    const record = history.record.bind(history);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    history.record = async (events) => {
      if (events.some((event) => event.subject === slow)) {
        held = true;
        await released;
      }
      return record(events);
    };
    startRelay(60_000, history, database.db.db!, 60_000);
    await expect.poll(() => held).toBe(true);
    await pendingDocument(fresh!, pendingKeyAt(Date.now()));
    relay!.kick();
    release();
    await published.waitFor(() => [slow, behind, fresh].every((id) => publishedSubjects().has(id!)));
    const order = published.messages.map((message) => message.body.subject as string);
    expect(order.indexOf(fresh!)).toBeLessThan(order.indexOf(behind!));
  });

  it('when a document is flagged pending with nothing to publish (a stop between its clean-up steps), then the relay unflags it', async () => {
    const id = `empty-${randomBytes(3).toString('hex')}`;
    await documents.insertOne({ _id: id, generation: 3, outbox: [], outboxPending: pendingKeyAt(Date.now()) } as never);
    startRelay(500);
    await expect.poll(() => pendingLeft([id])).toBe(0);
    expect(publishedSubjects().has(id)).toBe(false);
  });

  it('when a burst of documents is pending under one key and one of them changes while its event is published, then every event goes out, the others are cleared, and the changed one keeps its new event until that is published too', async () => {
    const [key] = keysFarFromNow();
    const ids = Array.from({ length: 120 }, (_, i) => `burst-${i}-${randomBytes(3).toString('hex')}`);
    for (const id of ids) await pendingDocument(id, key);
    const changed = ids[77]!;
    const later = event(`${changed}-later`);
    // A write of the request path lands between the relay's read and its clean-up: while the
    // batch's history is recorded (before anything is cleared), the document moves to
    // generation 2 with a new event, as a change through the API does.
    const history = new HistoryLog(database.db.db!, 'things_history', new Set(['right.created']), {
      kind: 'system',
      id: 'test',
    });
    const record = history.record.bind(history);
    let raced = false;
    history.record = async (events) => {
      if (!raced) {
        raced = true;
        await documents.updateOne({ _id: changed, generation: 1 } as never, {
          ...setWithOutbox({ generation: 2 }, [later]),
        });
      }
      return record(events);
    };
    startRelay(500, history);
    const expected = [...ids, `${changed}-later`];
    await published.waitFor(() => expected.every((id) => publishedSubjects().has(id)), 15_000);
    expect(raced).toBe(true);
    await expect.poll(() => pendingLeft(ids)).toBe(0);
    expect(await documents.findOne({ _id: changed } as never)).toMatchObject({ generation: 2, outbox: [] });
    // Each event once: none published again for a document whose clean-up lost the race.
    const subjects = published.messages.map((message) => message.body.subject as string);
    expect(subjects.filter((subject) => expected.includes(subject))).toHaveLength(expected.length);
  });
});

describe('the outbox relay publishes what this process inserts as it was stored', () => {
  it('when a write of this process inserts documents with events, then the relay publishes them and clears the documents without reading them back', async () => {
    // The same database through a connection whose commands the test sees (the driver's own monitoring).
    const watched = mongoose.createConnection(process.env.MONGODB_URL!, {
      dbName: database.db.name,
      monitorCommands: true,
    });
    await watched.asPromise();
    try {
      const reads: unknown[] = [];
      watched.getClient().on('commandStarted', (started) => {
        if (started.commandName === 'find' && started.command.find === 'things') reads.push(started.command.filter);
      });
      startRelay(60_000, undefined, watched.db!, 60_000);
      // The pass at start reads every key once; then nothing reads until the next poll, a minute away.
      await expect.poll(() => reads.length).toBe(PENDING_KEYS);
      reads.length = 0;
      const ids = ['first', 'second'].map((name) => `inserted-${name}-${randomBytes(3).toString('hex')}`);
      await new OutboxCollection(watched.db!, 'things').insertMany(
        ids.map((id) => ({ doc: { _id: id, generation: 1 }, outbox: [event(id)] })),
      );
      await published.waitFor(() => ids.every((id) => publishedSubjects().has(id)));
      await expect.poll(() => pendingLeft(ids)).toBe(0);
      expect(reads).toEqual([]);
    } finally {
      await relay?.stop();
      relay = undefined;
      await watched.close();
    }
  });

  it('when a read publishes an inserted document before its insert hands it over, then the hand publishes nothing again', async () => {
    startRelay(60_000);
    // Inserted without being handed (as if its insert had not returned yet): the next poll reads it.
    const named = (name: string) => `late-hand-${name}-${randomBytes(3).toString('hex')}`;
    const [read, handed] = [named('read'), named('handed')];
    const { outbox } = newOutbox([event(read)]);
    const stored = { _id: read, generation: 1, outbox, outboxPending: pendingKeyAt(Date.now()) };
    await documents.insertOne({ ...stored } as never);
    await published.waitFor(() => publishedSubjects().has(read));
    await expect.poll(() => pendingLeft([read])).toBe(0);
    // Its insert now hands it over, then another insert hands a second document: handed documents
    // are published in the order they were handed, so a second copy would come before the second.
    announcePending(database.db.db!, 'things', { inserted: [stored] });
    const second = { doc: { _id: handed, generation: 1 }, outbox: [event(handed)] };
    await new OutboxCollection(database.db.db!, 'things').insertMany([second]);
    await published.waitFor(() => publishedSubjects().has(handed));
    const subjects = published.messages.map((message) => message.body.subject as string);
    expect(subjects.filter((subject) => subject === read)).toHaveLength(1);
  });
});

describe('the outbox relay reads where it was told, not every key every few seconds (docs/decisions/0072)', () => {
  const named = (name: string) => `${name}-${randomBytes(3).toString('hex')}`;

  it('when a change of this process is written under a key the recent seconds no longer reach (a write that took long), then its event goes out at once, without a full pass', async () => {
    const [far] = keysFarFromNow();
    startRelay(60_000, undefined, database.db.db!, 60_000);
    // The pass at start has read every key; the next poll and pass are a minute away.
    const first = named('first');
    await pendingDocument(first, pendingKeyAt(Date.now()));
    relay!.kick();
    await published.waitFor(() => publishedSubjects().has(first));
    const slow = named('slow-change');
    await pendingDocument(slow, far);
    announcePending(database.db.db!, 'things', { changedUnder: far });
    await published.waitFor(() => publishedSubjects().has(slow), 10_000);
    await expect.poll(() => pendingLeft([slow])).toBe(0);
  });

  it('when more inserted documents are handed than the relay keeps, then it reads the keys they were stored under, recent or not', async () => {
    const [far] = keysFarFromNow();
    startRelay(60_000, undefined, database.db.db!, 60_000, 2);
    const first = named('first');
    await pendingDocument(first, pendingKeyAt(Date.now()));
    relay!.kick();
    await published.waitFor(() => publishedSubjects().has(first));
    // Ten documents stored under an old key, handed at once: more than four batches of two.
    const ids = Array.from({ length: 10 }, (_, i) => named(`overflow-${i}`));
    const stored = ids.map((id) => ({
      _id: id,
      generation: 1,
      outbox: newOutbox([event(id)]).outbox,
      outboxPending: far,
    }));
    await documents.insertMany(stored.map((doc) => ({ ...doc })) as never);
    announcePending(database.db.db!, 'things', { inserted: stored });
    await published.waitFor(() => ids.every((id) => publishedSubjects().has(id)), 10_000);
    await expect.poll(() => pendingLeft(ids)).toBe(0);
  });

  it('when the relay takes over a lease another relay held, then it reads every key at its next poll, not at its next full pass', async () => {
    const [far] = keysFarFromNow();
    // Another relay holds the lease for two more seconds, and left a document pending under an old key.
    await database.db
      .db!.collection('outbox_leases')
      .updateOne(
        { _id: 'outbox:things' } as never,
        { $set: { owner: 'another relay', until: new Date(Date.now() + 2_000), generation: 1 } },
        { upsert: true },
      );
    const left = named('left-behind');
    await pendingDocument(left, far);
    startRelay(60_000, undefined, database.db.db!, 200);
    await published.waitFor(() => publishedSubjects().has(left), 10_000);
    await expect.poll(() => pendingLeft([left])).toBe(0);
  });
});

describe("the outbox gauges' reading", () => {
  it('when events wait under two keys, then a scrape counts every key once, reads entries of those two alone, and both gauges share the reading', async () => {
    // A collection of its own, whose lease another relay holds: nothing here publishes it.
    const db = database.db.db!;
    await db
      .collection('outbox_leases')
      .updateOne(
        { _id: 'outbox:waiting' } as never,
        { $set: { owner: 'another relay', until: new Date(Date.now() + 60_000), generation: 1 } },
        { upsert: true },
      );
    const [first, second] = keysFarFromNow();
    const oldest = new Date(Date.now() - 90_000);
    const waiting = db.collection('waiting');
    await waiting.insertMany([
      {
        _id: 'a',
        generation: 1,
        outbox: [{ ...newOutbox([event('a')]).outbox[0]!, createdAt: oldest }],
        outboxPending: first,
      },
      { _id: 'b', generation: 1, ...newOutbox([event('b')]), outboxPending: second },
      { _id: 'c', generation: 1, ...newOutbox([event('c')]), outboxPending: second },
    ] as never[]);
    const monitored = mongoose.createConnection(process.env.MONGODB_URL!, {
      dbName: db.databaseName,
      monitorCommands: true,
    });
    await monitored.asPromise();
    const commands: Record<string, number> = {};
    monitored.getClient().on('commandStarted', ({ commandName }: mongo.CommandStartedEvent) => {
      commands[commandName] = (commands[commandName] ?? 0) + 1;
    });
    try {
      const gauges = new OutboxRelay({ db: monitored.db!, collection: 'waiting', client, logger });

      const [forPending, forOldest] = await Promise.all([gauges.pending(), gauges.pending()]);

      expect(forPending).toEqual({ documents: 3, oldestAt: oldest });
      expect(forOldest).toBe(forPending);
      expect(commands).toEqual({ aggregate: PENDING_KEYS, find: 2 });
    } finally {
      await monitored.close();
    }
  });
});
