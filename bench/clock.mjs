// `npm run bench:clock`: a year of monthly renewals rehearsed on a test clock, against the same
// renewals in real time (docs/performance.md, docs/decisions/0048). In one run, on one system:
// 1. real time: 12 × N monthly subscriptions of many users whose period ends at the same
//    second, created through the gateway before it: from that second until every next right,
//    every subscription.renewed and every ending right's right.expired has been published (a
//    month on the clock does all three); then the same number whose first period starts at a
//    second (no right to expire: what the benchmark compared with first);
// 2. a test clock: N monthly subscriptions on a clock set at the start of their first period
//    (that period issued before the clock is timed), then one advance of twelve months: from the
//    advance until the clock is `ready`, every month renewed and every month's right expired
//    (13 × N rights created, 12 × N expired, checked).
// It prints the times and the ratios (aimed for: at most 2). N is BENCH_CLOCK_SUBSCRIPTIONS
// (1,000). BENCH_CLOCK_PROGRESS=1 prints the clock's time and the rights made every 2 s of the
// advance; BENCH_CLOCK_REAL=0 leaves out the real-time phase (to look at the advance alone).
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

/**
 * 12 × N real subscriptions due at one second: from it until each has done what a clock's month
 * does to it. `rollover`: each was in a period ending then, so its next period's right is
 * created, `subscription.renewed` published and its ending right expired (a month on the clock
 * does all three). Otherwise each starts at that second: its first right and renewal only, no
 * right to expire (what this benchmark compared with first).
 */
async function realRenewals(rollover) {
  const total = MONTHS * N;
  const created = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const expired = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.expired');
  const renewed = await EventCollector.start(system.amqpUrl, 'subscriptions.events', 'subscription.renewed');
  // The due second leaves time for the creations at the rate this machine creates now (it has
  // varied fivefold from one hour to the next), measured on subscriptions due years later.
  const probe = 300;
  const probed = performance.now();
  await createAll('subs', probe, {
    grantorId: 'B',
    timeSpec: 'R/2035-01-01T00:00:00Z/P1M',
    rightsSpec: [{ sku: 'monthly' }],
  });
  const perSecond = probe / ((performance.now() - probed) / 1000);
  const due = new Date(Math.ceil((Date.now() + 20_000 + (total / (0.7 * perSecond)) * 1000) / 1000) * 1000);
  const start = new Date(due);
  if (rollover) start.setUTCMonth(start.getUTCMonth() - 1);
  await createAll('subs', total, { grantorId: 'B', timeSpec: `R/${iso(start)}/P1M`, rightsSpec: [{ sku: 'monthly' }] });
  if (Date.now() >= due.getTime() - 2_000)
    throw new Error(`creating ${total} subscriptions took past the due time (${perSecond.toFixed(0)}/s probed)`);
  console.log(`created ${total} subscriptions (${perSecond.toFixed(0)} a second probed before)`);
  const real = (m) => !m.body.data.clockId;
  const waits = [
    distinct(created, (m) => real(m) && m.body.data.timeInterval.startsWith(iso(due)), total),
    distinct(renewed, real, total),
  ];
  if (rollover) waits.push(distinct(expired, (m) => real(m) && m.body.data.timeInterval.endsWith(iso(due)), total));
  await Promise.all(waits);
  const seconds = (Date.now() - due.getTime()) / 1000;
  await Promise.all([created.close(), expired.close(), renewed.close()]);
  const what = rollover ? 'rolled over (next right, renewal, ending right expired)' : 'started (first right, renewal)';
  console.log(`real time: ${total} subscriptions due at once ${what} in ${seconds.toFixed(1)} s`);
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
  const count = (collector) => new Set(collector.messages.filter(onClock).map((m) => m.body.subject)).size;
  let shown = 0;
  for (let now = await clock(); now.status !== 'ready'; now = await clock()) {
    const elapsed = (performance.now() - advancing) / 1000;
    if (process.env.BENCH_CLOCK_PROGRESS === '1' && elapsed >= shown + 2) {
      shown = elapsed;
      console.log(
        `${elapsed.toFixed(1)} s: clock at ${now.time}, ${count(rights)} rights created, ${count(expired)} expired`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
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
  const skipReal = process.env.BENCH_CLOCK_REAL === '0';
  const rolledOver = skipReal ? NaN : await realRenewals(true);
  const started = skipReal ? NaN : await realRenewals(false);
  const clock = await rehearsal();
  console.log(
    `\n| N | ${MONTHS} × N real periods rolled over at once | ${MONTHS} × N first periods at once | ${MONTHS} months of N on a clock | clock ÷ rolled over | clock ÷ first periods |`,
  );
  console.log(`|---:|---:|---:|---:|---:|---:|`);
  console.log(
    `| ${N} | ${rolledOver.toFixed(1)} s | ${started.toFixed(1)} s | ${clock.toFixed(1)} s | ${(clock / rolledOver).toFixed(2)} | ${(clock / started).toFixed(2)} |`,
  );
} finally {
  await stop();
}
