// `npm run bench:webhooks` (also the last part of `npm run bench`): N events (default 10,000)
// delivered to one local endpoint that answers at once (docs/performance.md).
// The events are right.created of rights issued with `rights.issue` commands, as renewal
// issues them, so rights.events carries them as fast as the platform can make them. In one
// run it measures:
// - the rate at which rights.events carries them (a consumer of its own on the exchange,
//   from the first event to the last);
// - the rate at which the endpoint receives them (first attempts, from the first to the
//   last), and its ratio to the first;
// - for each event, the time from its arrival on rights.events to its first attempt at the
//   endpoint: p50 and p99.
// BENCH_SERVICE_ENV: more settings for every service, e.g. '{"WEBHOOK_CONCURRENCY_PER_ENDPOINT":"16"}'.
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuMeter,
  dispatcherCounters,
  percentile,
  processesOf,
  registerEndpoint,
  startBenchSystem,
  startWebhookReceiver,
} from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { TestSystem, issueRightsInBulk } = require(path.join(root, 'libs/testing/dist/index.js'));
const amqp = require(path.join(root, 'node_modules/amqplib'));
const { MongoClient } = require(path.join(root, 'node_modules/mongodb'));

const N = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const PER_COMMAND = 100;

const receiver = await startWebhookReceiver();
const { firstAttempt } = receiver;

const { system, stop } = await startBenchSystem({
  // As the images run them: one process per service (the figures are of processes).
  name: 'bench_webhooks',
  backends: ['catalog', 'rights', 'webhooks'],
  env: JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}'),
});

try {
  await system.seed({
    clients: [{ clientId: 'bench-grantor', grantorId: 'B' }],
    users: ['bench-user'],
    skus: { monthly: {} },
  });
  const authorization = TestSystem.clientAuthorization('bench-grantor');
  await registerEndpoint(system, authorization, receiver.url, ['right.created']);

  // When rights.events carries each event: a consumer of our own on the exchange.
  const connection = await amqp.connect(system.amqpUrl);
  const channel = await connection.createConfirmChannel();
  const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
  await channel.bindQueue(queue, 'rights.events', 'right.created');
  const carried = new Map();
  await channel.consume(
    queue,
    (message) => {
      if (message) carried.set(JSON.parse(message.content.toString()).id, Date.now());
    },
    { noAck: true },
  );

  // Where the CPU goes while the events are made and delivered, per event.
  const { cpuNow, spent } = cpuMeter(processesOf(system, ['rights', 'webhooks']));
  const total = (cpu) => Object.values(cpu).reduce((sum, seconds) => sum + seconds, 0);
  // What the processes spend idle (timers, the broker's and the database's housekeeping), per second.
  const idleFrom = cpuNow();
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  const idlePerS = total(spent(idleFrom, cpuNow())) / 5;
  const before = cpuNow();
  const started = performance.now();
  await issueRightsInBulk(system.amqpUrl, {
    prefix: 'Sbenchhook',
    count: N,
    perCommand: PER_COMMAND,
    grantorId: 'B',
    sku: 'monthly',
    timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/P1D`,
    connectIdOf: () => 'bench-user',
  });

  const deadline = Date.now() + Number(process.env.BENCH_WEBHOOK_DEADLINE_S ?? 600) * 1000;
  while ((carried.size < N || firstAttempt.size < N) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  const cpu = spent(before, cpuNow());
  const wallS = (performance.now() - started) / 1000;
  await connection.close();
  if (firstAttempt.size < N)
    throw new Error(`only ${firstAttempt.size} of ${N} events reached the endpoint (${carried.size} on the broker)`);

  const span = (times) => (Math.max(...times) - Math.min(...times)) / 1000;
  const carriedRate = N / span([...carried.values()]);
  const deliveredRate = N / span([...firstAttempt.values()]);
  const lags = [...firstAttempt].map(([id, at]) => at - carried.get(id)).sort((a, b) => a - b);
  console.log(`${N} events; ${receiver.attempts()} attempts reached the endpoint`);
  console.log(await dispatcherCounters(system));
  const busy = Object.entries(cpu).map(([name, seconds]) => `${name} ${((seconds * 1000) / N).toFixed(2)}`);
  const cores = Object.values(cpu).reduce((sum, seconds) => sum + seconds, 0) / wallS;
  console.log(
    `CPU ms per event: ${busy.join(', ')}; ${cores.toFixed(2)} cores busy on average over ${wallS.toFixed(0)} s`,
  );
  // The work of a delivery ends when its store says so: every delivery written as delivered (an
  // outcome waiting to be folded in counts as not yet; docs/decisions/0064), however long after.
  const settledS = await untilSettled(system, deadline, started);
  const settledCpu = spent(before, cpuNow());
  const settledMs = (total(settledCpu) - idlePerS * settledS) * 1000;
  const settledBusy = Object.entries(settledCpu).map(
    ([name, seconds]) => `${name} ${((seconds * 1000) / N).toFixed(2)}`,
  );
  console.log(
    `settled in the store ${settledS.toFixed(0)} s after the first command; CPU ms per event until then (${settledBusy.join(', ')}), all processes less their idle ${idlePerS.toFixed(2)} cores: ${(settledMs / N).toFixed(2)}`,
  );
  console.log(
    '\n| events | rights.events carried (events/s) | delivered (first attempts/s) | delivered ÷ carried | event to first attempt p50 | p99 | CPU ms per event to settled |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  console.log(
    `| ${N} | ${carriedRate.toFixed(0)} | ${deliveredRate.toFixed(0)} | ${(deliveredRate / carriedRate).toFixed(2)} | ${percentile(lags, 50)} ms | ${percentile(lags, 99)} ms | ${(settledMs / N).toFixed(2)} |`,
  );
} finally {
  await stop();
  receiver.close();
}

/**
 * Seconds from the start until every delivery is settled in the webhooks database: written as
 * delivered, or stored with its final outcome beside it. Looked at 35 s after the last first
 * attempt (the holds of the first attempts, their 10 s timeout and 15 s more, have ended and
 * been swept by then), and every 5 s after if need be: a look reads every pending document,
 * and frequent looks would cost the database more than what they measure.
 */
async function untilSettled(system, deadline, started) {
  const client = await MongoClient.connect(system.mongoUrlFor('webhooks'));
  try {
    const db = client.db();
    // Pending as stored, less those whose final outcome is stored beside them, plus holds not yet
    // swept (docs/decisions/0064; before it, the first term alone).
    const count = (collection, filter = {}) => db.collection(collection).countDocuments(filter);
    const waiting = async () =>
      (await count('deliveries', { status: 'pending' })) -
      (await count('delivery_outcomes')) +
      (await count('delivery_holds'));
    await new Promise((resolve) => setTimeout(resolve, 35_000));
    while ((await waiting()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5_000));
    return (performance.now() - started) / 1000;
  } finally {
    await client.close();
  }
}
