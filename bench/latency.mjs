// `npm run bench:latency`: how soon what the design promises "in normal operation" can be
// seen, on a machine the test suite is not sharing (the tests wait up to 20 s for these:
// docs/decisions/0038). One change at a time, BENCH_LATENCY_CHANGES of each (default 100),
// each timed from the 204 that acknowledged it, polled every 10 ms:
// - history (docs/api.md, 2 s): a right is suspended; until GET …/history lists the change;
// - the cascade (docs/api.md, 2 s): a subscription is suspended or activated; until its
//   current right reads SUSPENDED or ACTIVE;
// - another gateway replica (docs/api.md, 1 s): a right is created, then suspended, through
//   one replica; until an entitlement check on the other shows it, then no longer shows it.
// It prints p50, p99 and the slowest of each against the promise.
import { performance } from 'node:perf_hooks';
import { gatewayCaller, percentile, startBenchSystem, TestSystem } from './system.mjs';

const CHANGES = Number(process.env.BENCH_LATENCY_CHANGES ?? 100);
/** Longer than this and the change is reported as not seen (the run stops). */
const GIVE_UP_MS = 30_000;

const { system, stop } = await startBenchSystem({
  // As the images run them: one process per service, two gateway replicas.
  name: 'bench_latency',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  replicas: { gateway: 2 },
});

const A = TestSystem.clientAuthorization('bench-grantor');
const FIRST = system.service('gateway').url;
const SECOND = system.service('gateway#2').url;
const iso = (offsetMs) => new Date(Date.now() + offsetMs).toISOString();

const gateways = { [FIRST]: gatewayCaller(FIRST), [SECOND]: gatewayCaller(SECOND) };
/** A call as the bench grantor's client through the gateway at `base` (FIRST or SECOND). */
const call = (base, method, route, body) => gateways[base](method, route, A, body);

/** Milliseconds from now until `seen()` holds, polled every 10 ms. */
async function until(what, seen) {
  const start = performance.now();
  while (!(await seen())) {
    if (performance.now() - start > GIVE_UP_MS) throw new Error(`${what}: not seen in ${GIVE_UP_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - start;
}

const createRight = (user, base = FIRST) =>
  call(base, 'POST', `/id/users/${user}/rights`, {
    sku: 'news',
    grantorId: 'B',
    state: 'ACTIVE',
    timeInterval: `${iso(-60_000)}/${iso(3_600_000)}`,
  }).then((right) => right.rightId);

async function historyLatencies() {
  const latencies = [];
  for (let i = 0; i < CHANGES; i++) {
    const user = `history-${i % 10}`;
    const rightId = await createRight(user);
    const right = `/id/users/${user}/rights/${rightId}`;
    await call(FIRST, 'POST', `${right}/suspend`);
    latencies.push(
      await until('history', async () =>
        (await call(FIRST, 'GET', `${right}/history`)).history.some((entry) => entry.type === 'right.suspended'),
      ),
    );
  }
  return latencies;
}

async function cascadeLatencies() {
  const subscription = await call(FIRST, 'POST', '/id/users/cascade/subs', {
    grantorId: 'B',
    timeSpec: `R/${iso(-1_000).replace(/\.\d{3}Z$/, 'Z')}/P1M`,
    rightsSpec: [{ sku: 'news' }],
  });
  const ofSubscription = async () =>
    (await call(FIRST, 'GET', '/id/users/cascade/rights?grantorId=B')).right.find((right) =>
      right.link.some((link) => link.href.endsWith(`/subs/${subscription.subscriptionId}`)),
    );
  await until('the first period', async () => (await ofSubscription()) !== undefined);
  const { rightId } = await ofSubscription();
  const latencies = [];
  for (let i = 0; i < CHANGES; i++) {
    const [command, state] = i % 2 ? ['activate', 'ACTIVE'] : ['suspend', 'SUSPENDED'];
    await call(FIRST, 'POST', `/id/users/cascade/subs/${subscription.subscriptionId}/${command}`);
    latencies.push(
      await until(
        'the cascade',
        async () => (await call(FIRST, 'GET', `/id/users/cascade/rights/${rightId}`)).state === state,
      ),
    );
  }
  return latencies;
}

async function replicaLatencies() {
  const shows = async (user, rightId) =>
    (await call(SECOND, 'GET', `/id/users/${user}/entitlements/news`)).rights.some(
      (right) => right.rightId === rightId,
    );
  const latencies = [];
  for (let i = 0; i < CHANGES / 2; i++) {
    const user = `replica-${i % 10}`;
    const rightId = await createRight(user);
    latencies.push(await until('a created right on the other replica', () => shows(user, rightId)));
    await call(FIRST, 'POST', `/id/users/${user}/rights/${rightId}/suspend`);
    latencies.push(await until('a suspended right on the other replica', async () => !(await shows(user, rightId))));
  }
  return latencies;
}

try {
  const users = [
    ...Array.from({ length: 10 }, (_, i) => `history-${i}`),
    ...Array.from({ length: 10 }, (_, i) => `replica-${i}`),
    'cascade',
  ];
  await system.seed({ clients: [{ clientId: 'bench-grantor', grantorId: 'B' }], users, skus: { news: {} } });
  const rows = [];
  for (const [what, promise, measure] of [
    ['history entry of a change (docs/api.md)', 2_000, historyLatencies],
    ['cascade to the current right (docs/api.md)', 2_000, cascadeLatencies],
    ['change on the other gateway replica (docs/api.md)', 1_000, replicaLatencies],
  ]) {
    const sorted = (await measure()).sort((a, b) => a - b);
    const ms = (value) => `${value.toFixed(0)} ms`;
    rows.push(
      `| ${what} | ${sorted.length} | ${ms(percentile(sorted, 50))} | ${ms(percentile(sorted, 99))} | ${ms(sorted.at(-1))} | ${ms(promise)} |`,
    );
  }
  console.log('\n| from the 204 until | changes | p50 | p99 | slowest | promised |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
} finally {
  await stop();
}
