// `npm run bench:periodic`: what each replica's periodic work costs as the data grows
// (docs/operations.md "Periodic work per replica"). On the servers the tests use,
// for each size (10,000 and 100,000 documents a collection by default, BENCH_PERIODIC_SIZES),
// a scratch database is filled the way the services fill theirs, and every query a periodic
// loop makes is timed (the median of 5): the outbox relay's poll and its gauges, the
// scheduler's and the webhooks' sweep of one second, the webhooks' backlog gauge, the
// gateway's purge of expired idempotency keys and refresh of revocations, the retention purge.
// A query whose time does not grow with the size reads through an index; one that grows reads
// the collection. (The scheduler's rebuild has its own bench: `npm run bench:rebuild`.)
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { useTestServers } = require(path.join(root, 'libs/testing/dist/index.js'));
const { MongoClient } = require(path.join(root, 'node_modules/mongodb'));

const SIZES = (process.env.BENCH_PERIODIC_SIZES ?? '10000,100000').split(',').map(Number);
const BATCH = 1_000;
const now = Date.now();

/** Inserts `n` documents made by `make(i)`, in batches (inserts only: docs/architecture.md's limit is on updates). */
async function fill(collection, n, make) {
  for (let from = 0; from < n; from += BATCH)
    await collection.insertMany(
      Array.from({ length: Math.min(BATCH, n - from) }, (_, j) => make(from + j)),
      { ordered: false },
    );
}

async function timed(run) {
  const times = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[2];
}

const servers = await useTestServers();
const client = await MongoClient.connect(servers.mongoUrl);
const results = new Map();
try {
  for (const size of SIZES) {
    const db = client.db(`bench_periodic_${size}_${Date.now()}`);
    try {
      const started = performance.now();
      // As the services store them: nothing pending, due items over a day of seconds, deliveries
      // done, keys and history recent (nothing to purge: the cost is finding that out).
      await fill(db.collection('rights'), size, (i) => ({
        _id: `R${i}`,
        userId: `u${i % 1000}`,
        bucket: i % 64,
        outboxPending: false,
        outbox: [],
        data: 'x'.repeat(600),
      }));
      await fill(db.collection('right_expiries'), size, (i) => ({
        _id: `R${i}@1`,
        id: `R${i}`,
        due: `${i % 8}:${Math.floor(now / 1000) + 60 + (i % 86_400)}`,
        dueAt: new Date(now + 60_000 + (i % 86_400) * 1000),
      }));
      await fill(db.collection('deliveries'), size, (i) => ({
        _id: `D${i}`,
        endpointId: `E${i % 50}`,
        status: 'delivered',
        due: null,
        createdAt: new Date(now - (i % 1000) * 1000),
        body: 'x'.repeat(600),
      }));
      await fill(db.collection('idempotency_keys'), size, (i) => ({
        _id: `K${i}`,
        expiresAt: new Date(now + 3_600_000),
        response: 'x'.repeat(400),
      }));
      await fill(db.collection('revoked_tokens'), size, (i) => ({
        _id: `T${i}`,
        revokedAt: new Date(now - 3_600_000),
        expiresAt: new Date(now + 3_600_000),
      }));
      await fill(db.collection('right_history'), size, (i) => ({
        _id: `H${i}`,
        subject: `R${i % (size / 4)}`,
        time: new Date(now - (i % 1000) * 1000),
        data: 'x'.repeat(600),
      }));
      console.log(`filled 6 collections of ${size} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
      const second = `3:${Math.floor(now / 1000) + 61}`;
      const row = {
        'outbox relay poll (every 0.5 s, a pending key)': await timed(() =>
          db.collection('rights').find({ outboxPending: now }).limit(500).toArray(),
        ),
        // As the relay's gauges read (one reading for both): a count of each of the 64 keys, 8 at a
        // time; with nothing pending, no entries are read.
        'outbox gauges (each scrape, 64 keys counted)': await timed(async () => {
          for (let first = 1; first <= 64; first += 8)
            await Promise.all(
              Array.from({ length: 8 }, (_, i) => db.collection('rights').countDocuments({ outboxPending: first + i })),
            );
        }),
        "scheduler sweep (each tick, one partition's second)": await timed(() =>
          db.collection('right_expiries').find({ due: second }).toArray(),
        ),
        'webhooks sweep (every 0.5 s, one second)': await timed(() =>
          db
            .collection('deliveries')
            .find({ due: String(Math.floor(now / 1000)) })
            .toArray(),
        ),
        'webhooks backlog gauge (each scrape, first replica)': await timed(() =>
          db
            .collection('deliveries')
            .aggregate([{ $match: { status: 'pending' } }, { $group: { _id: '$endpointId', n: { $sum: 1 } } }])
            .toArray(),
        ),
        'gateway idempotency purge (every minute)': await timed(() =>
          db.collection('idempotency_keys').deleteMany({ expiresAt: { $lt: new Date(now) } }),
        ),
        'gateway revocation refresh (every few seconds)': await timed(() =>
          db
            .collection('revoked_tokens')
            .find({ revokedAt: { $gt: new Date(now - 60_000) } })
            .toArray(),
        ),
        'retention purge (hourly, FerretDB only)': await timed(() =>
          db.collection('right_history').deleteMany({ time: { $lt: new Date(now - 30 * 86_400_000) } }),
        ),
      };
      results.set(size, row);
    } finally {
      await db.dropDatabase().catch(() => undefined);
    }
  }
  const names = Object.keys(results.get(SIZES[0]));
  console.log(`\n| periodic query | ${SIZES.map((s) => `ms at ${s.toLocaleString('en')}`).join(' | ')} | × |`);
  console.log(`|---|${SIZES.map(() => '---:').join('|')}|---:|`);
  for (const name of names) {
    const values = SIZES.map((size) => results.get(size)[name]);
    const growth = values.at(-1) / values[0];
    console.log(`| ${name} | ${values.map((v) => v.toFixed(1)).join(' | ')} | ${growth.toFixed(1)} |`);
  }
} finally {
  await client.close();
  await servers.stop();
}
