// `npm run bench:clock-isolation`: whether simulated time delays real time (docs/api.md "Test
// clocks", docs/decisions/0053 and 0054). In one run, on one system:
// 1. alone: grantor G's REAL monthly subscriptions whose first period starts at one second,
//    with a webhook endpoint of G's subscribed to right.created; from that second, how late each
//    right is published (rights.events) and delivered to the endpoint;
// 2. beside a rehearsal: grantor R's CLOCKS test clocks of PER_CLOCK monthly subscriptions each,
//    with an endpoint of R's that did not ask for clock events, all advanced five years at once;
//    while they advance, G's REAL more subscriptions fall due at one second, measured as in 1;
//    then every clock is waited for to be `ready`, and its renewals counted (each month's right
//    created once per subscription).
// It prints each phase's lateness (p50, p99, worst) of rights and deliveries, the ratio of the
// p99s (aimed for: within 2×, or within a second more), and what R's endpoint received (aimed for:
// nothing). REAL (BENCH_ISOLATION_REAL, 200), CLOCKS (BENCH_ISOLATION_CLOCKS, 2), PER_CLOCK
// (BENCH_ISOLATION_PER_CLOCK, 200).
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventCollector, gatewayCaller, percentile, startBenchSystem, TestSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { WebhookReceiver } = require(path.join(root, 'libs/testing/dist/index.js'));

const REAL = Number(process.env.BENCH_ISOLATION_REAL ?? 200);
const CLOCKS = Number(process.env.BENCH_ISOLATION_CLOCKS ?? 2);
const PER_CLOCK = Number(process.env.BENCH_ISOLATION_PER_CLOCK ?? 200);
const YEARS = 5;
const PARALLEL = 16;
const users = Array.from({ length: 100 }, (_, i) => `isolation-user-${i}`);
const G = TestSystem.clientAuthorization('real-grantor');
const R = TestSystem.clientAuthorization('rehearsing-grantor');
const iso = (at) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

const { system, stop } = await startBenchSystem({
  name: 'bench_clock_isolation',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'],
  env: { SCHEDULER_TICK_MS: '200', TEST_CLOCKS_MAX: String(Math.max(10, CLOCKS)) },
});

const call = gatewayCaller(system.gatewayUrl);

/** Creates `count` subscriptions of `authorization`'s grantor, PARALLEL at a time, over the users. */
async function subscribeAll(authorization, grantorId, count, body) {
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < count) {
        const user = users[next++ % users.length];
        await call('POST', `/id/users/${user}/subs`, authorization, {
          grantorId,
          rightsSpec: [{ sku: 'monthly' }],
          ...body,
        });
      }
    }),
  );
}

const summary = (ms) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), worst: sorted.at(-1) };
};

/**
 * G's `REAL` subscriptions whose first period starts at a second a little ahead: how late each
 * one's right was published and delivered, in ms from that second. `whileWaiting` runs once
 * they are created, before the second comes.
 */
async function realDue(receiver, whileWaiting = async () => {}) {
  const due = new Date(Math.ceil((Date.now() + 8_000 + (REAL / 100) * 1000) / 1000) * 1000);
  const created = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const since = receiver.received.length;
  await subscribeAll(G, 'G', REAL, { timeSpec: `R/${iso(due)}/P1M` });
  await whileWaiting();
  if (Date.now() >= due.getTime()) throw new Error('the subscriptions were created past their due second');
  const ours = (data) => data.grantorId === 'G' && !data.clockId && data.timeInterval.startsWith(iso(due));
  await created.waitFor((messages) => messages.filter((m) => ours(m.body.data)).length >= REAL, 600_000);
  const deliveries = () => receiver.received.slice(since).filter((request) => ours(JSON.parse(request.body).data));
  for (let waited = 0; deliveries().length < REAL && waited < 600_000; waited += 100)
    await new Promise((resolve) => setTimeout(resolve, 100));
  const rights = created.messages.filter((m) => ours(m.body.data)).map((m) => m.receivedAt - due.getTime());
  const delivered = deliveries().map((request) => request.at - due.getTime());
  await created.close();
  return { rights: summary(rights), deliveries: summary(delivered) };
}

const receivers = { G: new WebhookReceiver(), R: new WebhookReceiver() };
try {
  await system.seed({
    clients: [
      { clientId: 'real-grantor', grantorId: 'G' },
      { clientId: 'rehearsing-grantor', grantorId: 'R' },
    ],
    users,
    skus: { monthly: {} },
  });
  for (const [grantor, receiver] of Object.entries(receivers)) {
    await receiver.start();
    await call('POST', '/webhooks/endpoints', grantor === 'G' ? G : R, {
      url: receiver.url,
      events: ['right.created'],
    });
  }

  const alone = await realDue(receivers.G);
  console.log(`alone: rights ${JSON.stringify(alone.rights)} ms, deliveries ${JSON.stringify(alone.deliveries)} ms`);

  // The rehearsal: CLOCKS clocks of PER_CLOCK subscriptions, their first month issued.
  const start = new Date('2026-01-01T00:00:00Z');
  const clocks = [];
  for (let c = 0; c < CLOCKS; c++) {
    const { clockId } = await call('POST', '/clocks', R, { grantorId: 'R', time: iso(start) });
    clocks.push(clockId);
    await subscribeAll(R, 'R', PER_CLOCK, { timeSpec: `R/${iso(start)}/P1M`, clockId });
  }
  const rehearsed = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const target = iso(new Date(Date.UTC(2026 + YEARS, 0, 1)));
  const besides = await realDue(receivers.G, async () => {
    for (const clockId of clocks) await call('POST', `/clocks/${clockId}/advance`, R, { to: target });
  });
  console.log(
    `beside ${CLOCKS} clocks × ${PER_CLOCK} advancing ${YEARS} years: rights ${JSON.stringify(besides.rights)} ms, deliveries ${JSON.stringify(besides.deliveries)} ms`,
  );
  let clocksAt = [];
  for (let waited = 0; waited < 1_800_000; waited += 1_000) {
    clocksAt = await Promise.all(clocks.map((clockId) => call('GET', `/clocks/${clockId}`, R)));
    if (clocksAt.every((clock) => clock.status === 'ready')) break;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  // The months the advance renewed (a first month's right still arriving is not one of them).
  const onClocks = rehearsed.messages.filter(
    (m) => clocks.includes(m.body.data.clockId) && !m.body.data.timeInterval.startsWith(iso(start)),
  );
  const distinct = new Set(onClocks.map((m) => m.body.subject)).size;
  await rehearsed.close();
  const months = YEARS * 12;
  console.log(
    `clocks: ${clocksAt.map((clock) => `${clock.status} at ${clock.time}`).join(', ')}; ${distinct} distinct rights created on them during the advance (${CLOCKS * PER_CLOCK * months} expected: ${months} months of ${CLOCKS * PER_CLOCK})`,
  );
  console.log(`R's endpoint (no "clocks": true) received ${receivers.R.received.length} deliveries`);
  const ratio = (key) => (besides[key].p99 / alone[key].p99).toFixed(2);
  console.log('\n| lateness from the due second | alone p50 / p99 | beside the rehearsal p50 / p99 | p99 ratio |');
  console.log('|---|---:|---:|---:|');
  for (const key of ['rights', 'deliveries'])
    console.log(
      `| ${key} | ${alone[key].p50} / ${alone[key].p99} ms | ${besides[key].p50} / ${besides[key].p99} ms | ${ratio(key)} |`,
    );
} finally {
  for (const receiver of Object.values(receivers)) await receiver.stop().catch(() => undefined);
  await stop();
}
