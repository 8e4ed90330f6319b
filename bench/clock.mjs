// `npm run bench:clock`: a year of monthly renewals rehearsed on a test clock, against the same
// renewals in real time (docs/performance.md, docs/decisions/0048). In one run, on one system:
// 1. real time: 12 × N monthly subscriptions of many users whose first period starts at the
//    same second, created through the gateway before it: from that second until every right
//    and every subscription.renewed has been published;
// 2. a test clock: N monthly subscriptions on a clock set at the start of their first period
//    (that period issued before the clock is timed), then one advance of twelve months: from the
//    advance until the clock is `ready`, every month renewed and every month's right expired
//    (13 × N rights created, 12 × N expired, checked).
// It prints both times and their ratio (aimed for: at most 2). N is BENCH_CLOCK_SUBSCRIPTIONS
// (1,000).
import { performance } from 'node:perf_hooks';
import { EventCollector, startBenchSystem, TestSystem } from './system.mjs';

const N = Number(process.env.BENCH_CLOCK_SUBSCRIPTIONS ?? 1_000);
const MONTHS = 12;
const USERS = Math.min(1_000, N);
const PARALLEL = 32;
const users = Array.from({ length: USERS }, (_, i) => `bench-user-${i}`);
const authorization = TestSystem.clientAuthorization('bench-grantor');
const iso = (at) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

const { system, stop } = await startBenchSystem({
  name: 'bench_clock',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  env: { SCHEDULER_TICK_MS: '200', TEST_CLOCKS_MAX: '10' },
});

/** POSTs `count` bodies through the gateway, PARALLEL at a time, each to one of the users in turn. */
async function createAll(path, count, body) {
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < count) {
        const user = users[next++ % USERS];
        const response = await fetch(`${system.gatewayUrl}/id/users/${user}/${path}`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        if (response.status !== 201) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      }
    }),
  );
}

/** Waits until `count` distinct subjects of `collector`'s messages that `keep` keeps have arrived. */
const distinct = (collector, keep, count) =>
  collector.waitFor((messages) => new Set(messages.filter(keep).map((m) => m.body.subject)).size >= count, 3_600_000);

/** 12 × N real subscriptions due at one second: seconds from it to their last right and renewal. */
async function realRenewals() {
  const total = MONTHS * N;
  const rights = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const renewed = await EventCollector.start(system.amqpUrl, 'subscriptions.events', 'subscription.renewed');
  const due = new Date(Math.ceil((Date.now() + 20_000 + (total / 150) * 1000) / 1000) * 1000);
  await createAll('subs', total, { grantorId: 'B', timeSpec: `R/${iso(due)}/P1M`, rightsSpec: [{ sku: 'monthly' }] });
  if (Date.now() >= due.getTime() - 2_000) throw new Error(`creating ${total} subscriptions took past the due time`);
  const real = (m) => !m.body.data.clockId;
  await Promise.all([distinct(rights, real, total), distinct(renewed, real, total)]);
  const seconds = (Date.now() - due.getTime()) / 1000;
  await Promise.all([rights.close(), renewed.close()]);
  console.log(`real time: ${total} subscriptions due at once renewed in ${seconds.toFixed(1)} s`);
  return seconds;
}

/** N subscriptions on a clock, a year advanced: seconds from the advance to ready. */
async function rehearsal() {
  const start = new Date('2026-01-01T00:00:00Z');
  const created = await fetch(`${system.gatewayUrl}/clocks`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ grantorId: 'B', time: iso(start) }),
  });
  if (created.status !== 201) throw new Error(`clock: ${created.status} ${await created.text()}`);
  const { clockId } = await created.json();
  const onClock = (m) => m.body.data.clockId === clockId;
  const rights = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const expired = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.expired');
  await createAll('subs', N, {
    grantorId: 'B',
    timeSpec: `R/${iso(start)}/P1M`,
    rightsSpec: [{ sku: 'monthly' }],
    clockId,
  });
  await distinct(rights, onClock, N);
  const clock = async () =>
    (await fetch(`${system.gatewayUrl}/clocks/${clockId}`, { headers: { authorization } })).json();
  const target = new Date(Date.UTC(2026 + MONTHS / 12, 0, 1));
  const advancing = performance.now();
  const advanced = await fetch(`${system.gatewayUrl}/clocks/${clockId}/advance`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ to: iso(target) }),
  });
  if (advanced.status !== 202) throw new Error(`advance: ${advanced.status} ${await advanced.text()}`);
  while ((await clock()).status !== 'ready') await new Promise((resolve) => setTimeout(resolve, 100));
  const seconds = (performance.now() - advancing) / 1000;
  // What a year made: every month's right, every month but the last expired.
  await Promise.all([distinct(rights, onClock, (MONTHS + 1) * N), distinct(expired, onClock, MONTHS * N)]);
  await Promise.all([rights.close(), expired.close()]);
  console.log(
    `test clock: ${N} subscriptions advanced ${MONTHS} months in ${seconds.toFixed(1)} s (${(MONTHS + 1) * N} rights created, ${MONTHS * N} expired)`,
  );
  return seconds;
}

try {
  await system.seed({ clients: [{ clientId: 'bench-grantor', grantorId: 'B' }], users, skus: { monthly: {} } });
  const real = await realRenewals();
  const clock = await rehearsal();
  console.log(`\n| N | ${MONTHS} × N real renewals due at once | ${MONTHS} months of N on a clock | clock ÷ real |`);
  console.log(`|---:|---:|---:|---:|`);
  console.log(`| ${N} | ${real.toFixed(1)} s | ${clock.toFixed(1)} s | ${(clock / real).toFixed(2)} |`);
} finally {
  await stop();
}
