// `npm run bench:renewal`: how fast N subscriptions that fall due at the same instant are
// renewed (docs/performance.md). In one run:
// 1. the MongoDB-wire server's raw `insertMany` rate of right-sized documents (batches of
//    500, 4 in flight, a scratch database dropped afterwards): the yardstick;
// 2. N monthly subscriptions of many users whose first period starts at the same second,
//    created through the gateway, their subscription.created all published before that second
//    (the relay's backlog is not renewal's); the clock runs from that second until every right has
//    been published on rights.events (so it is stored) and every subscription.renewed too.
// 3. N rights (issued with `rights.issue` commands, as renewal issues them) whose intervals
//    end at the same second, every right.created read by the scheduler before it: from that
//    second until every one has its right.expired, with when each quarter of them was out.
//    BENCH_EXPIRY_ONLY=1 measures this phase alone (no subscriptions, no renewal).
// 4. the floor (bench/floor.mjs): each write a renewal cannot avoid, measured alone on the same
//    servers in the same run, summed as the renewals/s a renewal making only those would reach.
// It prints seconds, renewals/s, its ratios to raw docs/s and to the floor, when the last
// subscription.renewed and the last right.created arrived, expiries/s, and the peak resident
// memory (VmHWM) of each service, and the CPU seconds each service and each server spent in
// the renewal window, and the database's statements in that window per renewal (where the
// local PostgreSQL keeps them: bench/statements.mjs). N defaults to 10,000 (BENCH_RENEWALS),
// of N / 100 users, at most 1,000 (BENCH_RENEWAL_USERS). BENCH_NODE_OPTIONS is handed to
// the services: `--max-old-space-size=256` holds each V8 heap to 256 MB like a container's
// limit (a service over it dies, and the run never ends); BENCH_SERVICE_ENV more settings for
// every service, e.g. '{"WEBHOOK_CONCURRENCY_PER_ENDPOINT":"32"}'. BENCH_RENEWAL_WEBHOOK=1 gives the
// grantor an endpoint (on this machine, answering at once) subscribed to right.created, and
// prints when the renewals' first attempts reached it, from the due second (p50, p99, last),
// with the dispatcher's counters of put-offs and late finds. The creation phase prints its own
// CPU seconds and statements per creation. BENCH_DOCUMENT_SIZES=1 prints the mean stored size of
// every collection's documents; BENCH_PERF_OUT a machine-wide `perf` profile (see profileMachine).
// It finds the service processes by what they run, so it measures an older build too.
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval } from 'node:timers';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { floorTable, measureFloor, rightDocument } from './floor.mjs';
import { cpuSeconds, peakMemory, profileMachine, spentSince } from './processes.mjs';
import { resetStatements, statementsSince, statementsTable } from './statements.mjs';
import { dispatcherCounters, percentile, registerEndpoint, startWebhookReceiver } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { useTestServers, TestSystem, EventCollector, issueRightsInBulk } = require(
  path.join(root, 'libs/testing/dist/index.js'),
);
const { MongoClient } = require(path.join(root, 'node_modules/mongodb'));
const amqp = require(path.join(root, 'node_modules/amqplib'));

const N = Number(process.env.BENCH_RENEWALS ?? 10_000);
/** The subscriptions' users (BENCH_RENEWAL_USERS; by default a hundred subscriptions each, at most 1,000 users). */
const USERS = Number(process.env.BENCH_RENEWAL_USERS ?? Math.min(1_000, Math.max(1, Math.ceil(N / 100))));
const PARALLEL = 32;
/** Subscriptions per second the gateway is assumed to create, with margin; the run stops if it was slower. */
const CREATE_RATE = Number(process.env.BENCH_CREATE_RATE ?? 150);
/** An endpoint of the grantor's receives every renewal's right.created (BENCH_RENEWAL_WEBHOOK=1). */
const receiver = process.env.BENCH_RENEWAL_WEBHOOK ? await startWebhookReceiver() : null;

const servers = await useTestServers();

/** Raw insertMany of documents shaped like a stored right with its pending event (~1.5 KB). */
async function rawInsertRate() {
  const client = await MongoClient.connect(servers.mongoUrl);
  const db = client.db(`bench_raw_${Date.now()}`);
  try {
    const collection = db.collection('rights');
    await collection.insertOne({ _id: 'warm-up' });
    const total = 20_000;
    const doc = (i) => ({
      ...rightDocument(i),
      outboxPending: true,
      outbox: [
        {
          id: `e${i}`,
          exchange: 'rights.events',
          event: { data: 'x'.repeat(1_000) },
          trace: {},
          createdAt: new Date(),
        },
      ],
    });
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < total) {
          const from = next;
          next += 500;
          await collection.insertMany(
            Array.from({ length: 500 }, (_, j) => doc(from + j)),
            { ordered: false },
          );
        }
      }),
    );
    return total / ((performance.now() - started) / 1000);
  } finally {
    await db.dropDatabase().catch(() => undefined);
    await client.close();
  }
}

const raw = await rawInsertRate();
console.log(`raw insertMany: ${raw.toFixed(0)} docs/s`);
const floor = await measureFloor({ mongoUrl: servers.mongoUrl, amqpUrl: servers.amqpUrl, n: N });
console.log(`the floor of one renewal (bench/floor.mjs), N = ${N}:\n${floorTable(floor)}`);

const system = await TestSystem.start({
  // As the images run them: one process per service (the figures are of processes).
  processes: true,
  name: 'bench_renewal',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', ...(receiver ? ['webhooks'] : [])],
  env: {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '0',
    RATE_LIMIT_USER_PER_SECOND: '0',
    RATE_LIMIT_OPEN_PER_SECOND: '0',
    SCHEDULER_TICK_MS: '200',
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
    ...JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}'),
  },
});
// Interrupted (Ctrl-C, timeout): stop the services too, or they keep loading the servers.
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => void system.stop().finally(() => process.exit(130)));
// An error thrown outside the run's `try` (a timer's callback) would end this process and leave
// the services running, loading the servers under the next measurement: stop them first.
process.once('uncaughtException', (error) => {
  console.error(error);
  void system.stop().finally(() => process.exit(1));
});

/**
 * The mean BSON size of the documents of every collection of the system's databases (a sample of
 * 200 each; BENCH_DOCUMENT_SIZES=1): what FerretDB converts on every write and read.
 */
async function documentSizes() {
  const { BSON } = require(path.join(root, 'node_modules/mongodb'));
  const client = await MongoClient.connect(servers.mongoUrl);
  try {
    const { databases } = await client.db().admin().listDatabases();
    const rows = [];
    for (const { name } of databases.filter((database) => database.name.startsWith(`${system.prefix}_`))) {
      for (const { name: collection } of await client.db(name).listCollections().toArray()) {
        const docs = await client.db(name).collection(collection).find().limit(200).toArray();
        if (docs.length === 0) continue;
        const bytes = docs.reduce((sum, doc) => sum + BSON.calculateObjectSize(doc), 0) / docs.length;
        rows.push(`| ${name.slice(system.prefix.length + 1)} | ${collection} | ${Math.round(bytes)} |`);
      }
    }
    console.log(`\n| database | collection | mean bytes |\n|---|---|---:|\n${rows.sort().join('\n')}`);
  } finally {
    await client.close();
  }
}

/** Renewal: N subscriptions created through the gateway, all due at one second; resolves its seconds. */
async function renewAll(users) {
  const authorization = TestSystem.clientAuthorization('bench-grantor');
  const rights = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const renewed = await EventCollector.start(system.amqpUrl, 'subscriptions.events', 'subscription.renewed');
  const created = await EventCollector.start(system.amqpUrl, 'subscriptions.events', 'subscription.created');
  if (receiver) await registerEndpoint(system, authorization, receiver.url, ['right.created']);

  // Creating N subscriptions takes a while here: start them after that, all at the same second.
  const due = new Date(Math.ceil((Date.now() + 15_000 + (N / CREATE_RATE) * 1000) / 1000) * 1000);
  const body = JSON.stringify({
    grantorId: 'B',
    timeSpec: `R/${due.toISOString().replace(/\.000Z$/, 'Z')}/P1M`,
    rightsSpec: [{ sku: 'monthly' }],
  });
  let next = 0;
  resetStatements();
  const creationProfiler = process.env.BENCH_PERF_PHASE === 'create' ? profileMachine() : undefined;
  const cpuBeforeCreating = cpuSeconds();
  const createdAt = Date.now();
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < N) {
        const user = users[next++ % USERS];
        const response = await fetch(`${system.gatewayUrl}/id/users/${user}/subs`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body,
        });
        if (response.status !== 201) throw new Error(`create: ${response.status} ${await response.text()}`);
      }
    }),
  );
  const creating = (Date.now() - createdAt) / 1000;
  await creationProfiler?.stop();
  const creationStatements = statementsSince('bench_renewal');
  const cpuCreating = spentSince(cpuBeforeCreating);
  if (Date.now() >= due.getTime())
    throw new Error(`creating ${N} subscriptions took past the due time; lower BENCH_CREATE_RATE`);
  console.log(
    `created ${N} subscriptions of ${USERS} users in ${creating.toFixed(1)} s (${(N / creating).toFixed(0)}/s, ${PARALLEL} in flight); due at ${due.toISOString()}`,
  );
  console.log(`CPU seconds of each service and server while creating: ${JSON.stringify(cpuCreating)}`);
  console.log(`\nthe database's statements while creating:\n\n${statementsTable(creationStatements, N, 'creation')}\n`);
  // The scheduler learns of a subscription from its subscription.created: renewal is timed
  // only once the outbox relay has published them all, or it would time the relay's backlog.
  const createdEnd = Date.now();
  // Distinct subscriptions: a relay may publish an event again (at least once, docs/architecture.md).
  const announced = () => new Set(created.messages.map((message) => message.body.subject)).size;
  await created.waitFor(() => announced() >= N, Math.max(0, due.getTime() - Date.now() - 1_000)).catch(() => undefined);
  const published = announced();
  await created.close();
  if (published < N)
    throw new Error(
      `${published} of ${N} subscription.created published a second before the due time: the relay fell behind; lower BENCH_CREATE_RATE`,
    );
  console.log(
    `every subscription.created published ${((Date.now() - createdEnd) / 1000).toFixed(1)} s after the last create`,
  );

  // When each kind of event was complete: where the time goes between the two services.
  const completeAt = (collector) =>
    collector.waitFor((messages) => messages.length >= N, 3_600_000).then(() => (Date.now() - due.getTime()) / 1000);
  // What each service spent of the machine from the due second to the last event.
  // And the statements the database ran in that window (bench/statements.mjs).
  let profiler;
  const cpuAtDue = new Promise((resolve) =>
    setTimeout(() => {
      resetStatements();
      if (process.env.BENCH_PERF_PHASE !== 'create') profiler = profileMachine();
      resolve(cpuSeconds());
    }, due.getTime() - Date.now()),
  );
  const [renewedAt, createdAt2] = await Promise.all([completeAt(renewed), completeAt(rights)]);
  const seconds = (Date.now() - due.getTime()) / 1000;
  await profiler?.stop();
  const cpuRenewing = spentSince(await cpuAtDue);
  console.log(
    `CPU seconds of each service and server from the due second to the last event: ${JSON.stringify(cpuRenewing)}`,
  );
  console.log(
    `last subscription.renewed at ${renewedAt.toFixed(1)} s, last right.created at ${createdAt2.toFixed(1)} s`,
  );
  console.log(`renewed ${N} in ${seconds.toFixed(1)} s`);
  const statements = statementsSince('bench_renewal');
  if (receiver) await webhooksDelivered(due, rights);
  console.log(`\nthe database's statements from the due second to the last event:\n`);
  console.log(statementsTable(statements, N, 'renewal'));
  await rights.close();
  await renewed.close();
  return seconds;
}

/**
 * When the renewals' right.created reached the grantor's endpoint, from the due second; and where
 * each event's time went: from rights.events (`rights`, its own queue on the exchange) to the
 * webhooks' event consumer (the delivery's `createdAt`, when its batch was handled), and from
 * there to the endpoint.
 */
async function webhooksDelivered(due, rights) {
  const deadline = Date.now() + 600_000;
  while (receiver.firstAttempt.size < N && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  const lags = [...receiver.firstAttempt.values()].map((at) => (at - due.getTime()) / 1000).sort((a, b) => a - b);
  console.log(
    `webhooks: ${receiver.firstAttempt.size} of ${N} right.created reached the endpoint (${receiver.attempts()} attempts); from the due second p50 ${percentile(lags, 50).toFixed(1)} s, p99 ${percentile(lags, 99).toFixed(1)} s, last ${lags.at(-1).toFixed(1)} s`,
  );
  const carried = new Map(rights.messages.map(({ body, receivedAt }) => [body.id, receivedAt]));
  const client = await MongoClient.connect(system.mongoUrlFor('webhooks'));
  try {
    const handled = await client
      .db()
      .collection('deliveries')
      .find({}, { projection: { eventId: 1, createdAt: 1 } })
      .toArray();
    const toConsumer = [];
    const toEndpoint = [];
    for (const { eventId, createdAt } of handled) {
      const at = createdAt.getTime();
      if (carried.has(eventId)) toConsumer.push(at - carried.get(eventId));
      if (receiver.firstAttempt.has(eventId)) toEndpoint.push(receiver.firstAttempt.get(eventId) - at);
    }
    const spread = (ms) => {
      ms.sort((a, b) => a - b);
      return `p50 ${percentile(ms, 50)} ms, p99 ${percentile(ms, 99)} ms`;
    };
    console.log(
      `each event from rights.events to the webhooks' consumer: ${spread(toConsumer)}; from there to the endpoint: ${spread(toEndpoint)}`,
    );
  } finally {
    await client.close();
  }
  console.log(await dispatcherCounters(system));
}

try {
  const users = Array.from({ length: USERS }, (_, i) => `bench-user-${i}`);
  await system.seed({ clients: [{ clientId: 'bench-grantor', grantorId: 'B' }], users, skus: { monthly: {} } });
  // BENCH_EXPIRY_ONLY=1 leaves renewal out: the expiry phase alone, at a tenth of the wait.
  const seconds = process.env.BENCH_EXPIRY_ONLY ? null : await renewAll(users);
  const rate = seconds && N / seconds;

  // Expiry: N rights issued as renewal issues them (100 a command), all ending at one second.
  const expired = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.expired');
  const issued = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const end = new Date(Math.ceil((Date.now() + 20_000 + N) / 1000) * 1000);
  await issueRightsInBulk(system.amqpUrl, {
    prefix: 'Sbenchexpiry',
    count: N,
    perCommand: 100,
    grantorId: 'B',
    sku: 'monthly',
    timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/${end.toISOString()}`,
    connectIdOf: (c) => users[c % USERS],
  });
  await issued.waitFor((messages) => messages.length >= N, 3_600_000);
  const issuedBefore = (end.getTime() - Date.now()) / 1000;
  // The scheduler learns of a right's end from its right.created: expiry is timed only once
  // its queue of them is empty (ready messages, read at once; it holds few more unacked), or it
  // would time the scheduler's backlog, not expiry.
  const broker = await amqp.connect(system.amqpUrl);
  const schedulerQueue = await broker.createChannel();
  const queuedForScheduler = async () => (await schedulerQueue.checkQueue('scheduler.rights-events')).messageCount;
  while ((await queuedForScheduler()) > 0 && Date.now() < end.getTime() - 1_000)
    await new Promise((resolve) => setTimeout(resolve, 200));
  const left = await queuedForScheduler();
  await broker.close();
  if (left > 0) throw new Error(`the scheduler had ${left} right.created still queued a second before their end`);
  console.log(
    `every right to expire issued ${issuedBefore.toFixed(1)} s before its end, read by the scheduler ${((end.getTime() - Date.now()) / 1000).toFixed(1)} s before`,
  );
  // When a quarter, half, three quarters and all of the expiries were out: whether the rate holds.
  // Distinct rights: a right.expired published twice (at least once, docs/architecture.md) counts once.
  const expiredRights = new Set();
  let counted = 0;
  const expiredCount = () => {
    for (; counted < expired.messages.length; counted++) expiredRights.add(expired.messages[counted].body.subject);
    return expiredRights.size;
  };
  const quarters = [];
  const watching = setInterval(() => {
    while (quarters.length < 3 && expiredCount() >= (N * (quarters.length + 1)) / 4)
      quarters.push((Date.now() - end.getTime()) / 1000);
  }, 50);
  await expired.waitFor(() => expiredCount() >= N, 3_600_000);
  clearInterval(watching);
  const expirySeconds = (Date.now() - end.getTime()) / 1000;
  console.log(
    `right.expired of a quarter, half, three quarters and all at ${[...quarters, expirySeconds].map((at) => `${at.toFixed(1)} s`).join(', ')}`,
  );
  // Work done twice shows here: items the scheduler commanded, events published, for N rights.
  const metrics = await (await fetch(`${system.service('scheduler').url}/metrics`)).text();
  const commandedExpiries = /^scheduler_commanded_items_total\{[^}]*type="rights\.expire"[^}]*\} (\d+)/m.exec(
    metrics,
  )?.[1];
  console.log(
    `for ${N} rights: ${commandedExpiries} expiry items commanded by the scheduler, ${expired.messages.length} right.expired received`,
  );
  await expired.close();
  await issued.close();

  console.log(`peak resident memory (MB): ${JSON.stringify(peakMemory())}`);
  console.log(
    `\n| N | raw insertMany docs/s | floor renewals/s | from due to last right and event | renewals/s | ÷ insertMany | ÷ floor | from end to last right.expired | expiries/s |`,
  );
  console.log(`|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
  console.log(
    `| ${N} | ${raw.toFixed(0)} | ${floor.floorRate.toFixed(0)} | ${seconds ? `${seconds.toFixed(1)} s | ${rate.toFixed(1)} | ${(rate / raw).toFixed(3)} | ${(rate / floor.floorRate).toFixed(3)}` : '– | – | – | –'} | ${expirySeconds.toFixed(1)} s | ${(N / expirySeconds).toFixed(0)} |`,
  );
  if (process.env.BENCH_DOCUMENT_SIZES) await documentSizes();
} finally {
  receiver?.close();
  await system.stop();
  await servers.stop();
}
