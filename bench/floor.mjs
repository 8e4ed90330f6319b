// The floor of renewal: the raw cost, on the servers the benchmark runs against and
// in the same run, of each write one renewal must make and cannot avoid (docs/api.md):
//
// - the right, inserted (in batches: `insertMany`, as renewal issues rights);
// - two history records, the subscription's `subscription.renewed` and the right's
//   `right.created` (docs/api.md "History"; flat records, in batches);
// - the subscription's progress (its next period and generation), which renewal today writes
//   as a compare-and-set update of the subscription, one document a statement, 16 in flight
//   (docs/architecture.md: never one many-statement update on FerretDB); measured beside it, the same
//   progress as an inserted record keyed by (subscription, period), the alternative the issue
//   names;
// - measured beside them, not summed: the subscription's read by id, 16 in flight, which renewal
//   made until it planned from the snapshot its command carries (docs/decisions/0026);
// - the two events, `subscription.renewed` and `right.created`, published persistent with
//   publisher confirms to a topic exchange with a durable quorum queue bound.
//
// Each is measured alone on its own scratch database, exchange and queue (dropped afterwards),
// as microseconds per renewal; the floor is the sum of the writes, with the cheaper form of
// progress: the rate a renewal could reach if it made nothing but these, one after another, on
// this machine.
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { MongoClient } = require(path.join(root, 'node_modules/mongodb'));
const amqp = require(path.join(root, 'node_modules/amqplib'));

const BATCH = 500;
const BATCHES_IN_FLIGHT = 4;
const POINT_OPS_IN_FLIGHT = 16;

const subscriptionId = (i) => `S${String(i).padStart(25, '0')}`;
const eventData = 'x'.repeat(900);

/** A stored right as renewal inserts it (the raw insertMany of bench/renewal.mjs adds its pending event). */
export const rightDocument = (i) => ({
  _id: `R${String(i).padStart(31, '0')}`,
  userId: `bench-user-${i % 100}`,
  state: 'ACTIVE',
  grantorId: 'B',
  grantorContext: null,
  serviceProviderId: null,
  sku: 'monthly',
  payloadJson: null,
  used: false,
  start: new Date(),
  end: new Date(),
  timeInterval: '2026-12-01T00:00:00Z/2027-01-01T00:00:00Z',
  subscriptionId: subscriptionId(i),
  generation: 1,
  createdAt: new Date(),
  updatedAt: new Date(),
  removed: false,
  bucket: i % 64,
});

const historyRecord = (i, kind) => ({
  _id: `${kind}-${i}`,
  subject: kind === 'right' ? rightDocument(i)._id : subscriptionId(i),
  generation: 2,
  order: 0,
  type: kind === 'right' ? 'right.created' : 'subscription.renewed',
  time: new Date(),
  actorKind: 'platform',
  actorId: 'scheduler',
  data: JSON.stringify({ data: eventData }),
});

const subscription = (i) => ({
  _id: subscriptionId(i),
  userId: `bench-user-${i % 100}`,
  grantorId: 'B',
  grantorContext: null,
  state: 'ACTIVE',
  rightsSpec: [{ sku: 'monthly' }],
  timeSpec: 'R/2026-12-01T00:00:00Z/P1M',
  origTimeSpec: 'R/2026-12-01T00:00:00Z/P1M',
  paymentAgreement: null,
  nextPeriod: 0,
  deleted: false,
  generation: 1,
  createdAt: new Date(),
  updatedAt: new Date(),
  outboxPending: false,
  outbox: [],
  lastEvents: [],
  bucket: i % 64,
});

/** Runs `task(i)` for i in [0, n) with `inFlight` at once; microseconds per item. */
async function perItem(n, inFlight, task) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) await task(next++);
    }),
  );
  return ((performance.now() - started) * 1000) / n;
}

/** `insertMany` of `n` documents made by `make`, in batches, several in flight; µs per document. */
const inserted = (collection, n, make) =>
  perItem(Math.ceil(n / BATCH), BATCHES_IN_FLIGHT, async (batch) => {
    const docs = [];
    for (let i = batch * BATCH; i < Math.min(n, (batch + 1) * BATCH); i++) docs.push(make(i));
    await collection.insertMany(docs, { ordered: false });
  }).then((perBatch) => (perBatch * Math.ceil(n / BATCH)) / n);

async function databaseCosts(mongoUrl, n) {
  const client = await MongoClient.connect(mongoUrl);
  const db = client.db(`bench_floor_${Date.now()}`);
  try {
    const collection = async (name) => {
      await db.collection(name).insertOne({ _id: 'warm-up' });
      return db.collection(name);
    };
    const rights = await collection('rights');
    const rightHistory = await collection('right_history');
    const subscriptionHistory = await collection('subscription_history');
    const subscriptions = await collection('subscriptions');
    const progress = await collection('renewals');
    await inserted(subscriptions, n, subscription); // the documents renewal reads and updates

    const costs = {};
    costs.right = await inserted(rights, n, rightDocument);
    costs.rightHistory = await inserted(rightHistory, n, (i) => historyRecord(i, 'right'));
    costs.subscriptionHistory = await inserted(subscriptionHistory, n, (i) => historyRecord(i, 'subscription'));
    costs.read = await perItem(n, POINT_OPS_IN_FLIGHT, (i) => subscriptions.findOne({ _id: subscriptionId(i) }));
    costs.progressUpdate = await perItem(n, POINT_OPS_IN_FLIGHT, (i) =>
      subscriptions.updateOne(
        { _id: subscriptionId(i), generation: 1 },
        { $set: { nextPeriod: 1, generation: 2, updatedAt: new Date(), lastEvents: [eventData] } },
      ),
    );
    costs.progressInsert = await inserted(progress, n, (i) => ({
      _id: `${subscriptionId(i)}@2026-12-01T00:00:00Z`,
      subscriptionId: subscriptionId(i),
      period: 1,
      generation: 2,
      at: new Date(),
    }));
    return costs;
  } finally {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  }
}

async function publishCost(amqpUrl, n) {
  const connection = await amqp.connect(amqpUrl);
  const exchange = `bench.floor.${Date.now()}`;
  try {
    const channel = await connection.createConfirmChannel();
    await channel.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
    const { queue } = await channel.assertQueue(`${exchange}.q`, {
      durable: true,
      arguments: { 'x-queue-type': 'quorum' },
    });
    await channel.bindQueue(queue, exchange, '#');
    const body = Buffer.from(JSON.stringify({ specversion: '1.0', data: eventData }));
    // Two events a renewal, published in batches with every confirm awaited, as the handlers do.
    const events = 2 * n;
    const started = performance.now();
    for (let from = 0; from < events; from += BATCH) {
      const batch = Math.min(BATCH, events - from);
      await Promise.all(
        Array.from(
          { length: batch },
          () =>
            new Promise((resolve, reject) =>
              channel.publish(exchange, 'right.created', body, { persistent: true }, (error) =>
                error ? reject(error) : resolve(),
              ),
            ),
        ),
      );
    }
    const perRenewal = ((performance.now() - started) * 1000) / n;
    await channel.deleteQueue(queue);
    await channel.deleteExchange(exchange);
    return perRenewal;
  } finally {
    await connection.close();
  }
}

/**
 * Each unavoidable write's cost in µs per renewal, and the floor: renewals/s if a renewal made
 * only those, with its progress in the cheaper of the two forms (the read is not summed).
 */
export async function measureFloor({ mongoUrl, amqpUrl, n = 10_000 }) {
  const costs = { ...(await databaseCosts(mongoUrl, n)), events: await publishCost(amqpUrl, n) };
  const progress = Math.min(costs.progressUpdate, costs.progressInsert);
  const floorMicros = costs.right + costs.rightHistory + costs.subscriptionHistory + progress + costs.events;
  return { costs, floorMicros, floorRate: 1e6 / floorMicros };
}

/** The table docs/performance.md keeps: one row per write, µs per renewal. */
export function floorTable({ costs, floorMicros, floorRate }) {
  const row = (name, micros) => `| ${name} | ${micros.toFixed(0)} | ${(1e6 / micros).toFixed(0)} |`;
  return [
    '| write (one renewal) | µs per renewal | alone, renewals/s |',
    '|---|---:|---:|',
    row('the right, insertMany', costs.right),
    row("the right's history record, insertMany", costs.rightHistory),
    row("the subscription's history record, insertMany", costs.subscriptionHistory),
    row('(not summed: the subscription read by id, 16 in flight; off the path since 0026)', costs.read),
    row('progress as an update of the subscription, 16 in flight', costs.progressUpdate),
    row('progress as an inserted record, insertMany', costs.progressInsert),
    row('two events published with confirms', costs.events),
    `| **floor** (the writes above, progress in its cheaper form) | **${floorMicros.toFixed(0)}** | **${floorRate.toFixed(0)}** |`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { provideTestServers } = require(path.join(root, 'libs/testing/dist/index.js'));
  const servers = await provideTestServers();
  try {
    const floor = await measureFloor({ mongoUrl: servers.mongoUrl, amqpUrl: servers.amqpUrl });
    console.log(floorTable(floor));
  } finally {
    await servers.stop();
  }
}
