// `npm run bench:metering`: what metered rights cost (docs/api.md "Consumption by SKU",
// docs/decisions/0045; docs/performance.md), as ratios measured in one run:
// - consumption by SKU (`POST …/entitlements/{sku}/consumption {"amount":1}`) against usage by
//   right id (`POST …/rights/{rightId}/usage {"amount":1}`), both on metered rights, 16
//   connections, each request for another user (target >= 0.8), with the consumption's p99;
// - the entitlement check of a user holding a metered right (its `balance`) against the gateway's
//   own GET /id/users/{connectId} (target >= 0.8), and against the check of a plain right;
// - memory per projected metered right, in this process (`--expose-gc`), beside a plain one.
// Rounds go through the targets forth and back (ABBA), each target once the events of the one
// before are published.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { projectedRights, startBenchSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { EntitlementProjection } = require(path.join(root, 'services/gateway/dist/domain/entitlements.js'));

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const USERS = Number(process.env.BENCH_USERS ?? 200);
const PROJECTED = Number(process.env.BENCH_RIGHTS ?? 100_000);
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');

/** Heap per projected right, plain or metered (`projectedRights`). */
function projectedBytesPerRight(metered) {
  const now = Date.now();
  const rights = projectedRights(PROJECTED, { metered });
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const projection = new EntitlementProjection();
  for (const right of rights) projection.apply(right, now);
  globalThis.gc();
  const bytes = (process.memoryUsage().heapUsed - before) / projection.size;
  return { bytes, size: projection.size };
}

const plain = projectedBytesPerRight(false);
const metered = projectedBytesPerRight(true);

const { system, stop } = await startBenchSystem({ name: 'bench_metering', backends: ['catalog', 'rights'] });
try {
  const admin = system.adminHeaders({ 'content-type': 'application/json' });
  const put = async (pathname, body) => {
    const answer = await fetch(`${system.gatewayUrl}${pathname}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify(body),
    });
    if (answer.status !== 201) throw new Error(`PUT ${pathname}: ${answer.status} ${await answer.text()}`);
  };
  await put('/catalog/skus/metered', { name: 'Metered', serviceProviderId: 'provider', grantorIds: ['bench'] });
  await put('/catalog/skus/plain', { name: 'Plain', serviceProviderId: 'provider', grantorIds: ['bench'] });
  await put('/admin/clients/bench-grantor', { secret: 'bench-grantor-secret', grantorId: 'bench' });
  await put('/admin/clients/bench-provider', { secret: 'bench-provider-secret', grantorId: 'provider' });
  const grantor = `Basic ${Buffer.from('bench-grantor:bench-grantor-secret').toString('base64')}`;
  const provider = `Basic ${Buffer.from('bench-provider:bench-provider-secret').toString('base64')}`;
  // Each user holds one metered right worth more than any run consumes.
  const users = [];
  const end = new Date(Date.now() + 30 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  for (let u = 0; u < USERS; u++) {
    const user = `bench-metered-${u}`;
    const registered = await fetch(`${system.gatewayUrl}/id/users/${user}`, { method: 'PUT', headers: admin });
    if (registered.status !== 201) throw new Error(`cannot register ${user}: ${registered.status}`);
    const grant = async (sku, quantity) => {
      const created = await fetch(`${system.gatewayUrl}/id/users/${user}/rights`, {
        method: 'POST',
        headers: { authorization: grantor, 'content-type': 'application/json' },
        body: JSON.stringify({
          sku,
          grantorId: 'bench',
          state: 'ACTIVE',
          ...(quantity ? { quantity } : {}),
          timeInterval: `2026-01-01T00:00:00Z/${end}`,
        }),
      });
      if (created.status !== 201) throw new Error(`cannot create a right: ${created.status} ${await created.text()}`);
      return (await created.json()).rightId;
    };
    // A plain right of another SKU beside it: the check with and without a balance.
    await grant('plain');
    users.push({ user, rightId: await grant('metered', 1_000_000_000) });
  }

  /** Each request of a target for the next user (a consumption of one user's SKU queues behind the last). */
  const rotating = (pathOf, method = 'POST', body) => {
    let next = 0;
    return {
      method,
      ...(body ? { body } : {}),
      requests: [
        {
          setupRequest: (request) => ({ ...request, path: pathOf(users[next++ % users.length]) }),
        },
      ],
    };
  };
  const one = JSON.stringify({ amount: 1 });
  const targets = {
    'POST usage by right id {amount:1} (metered)': [
      { authorization: provider, 'content-type': 'application/json' },
      rotating(({ user, rightId }) => `/id/users/${user}/rights/${rightId}/usage`, 'POST', one),
    ],
    'POST consumption by SKU {amount:1}': [
      { authorization: provider, 'content-type': 'application/json' },
      rotating(({ user }) => `/id/users/${user}/entitlements/metered/consumption`, 'POST', one),
    ],
    'GET entitlement with a balance (check)': [
      { authorization: provider },
      rotating(({ user }) => `/id/users/${user}/entitlements/metered`, 'GET'),
    ],
    'GET entitlement with a plain right (check)': [
      { authorization: provider },
      rotating(({ user }) => `/id/users/${user}/entitlements/plain`, 'GET'),
    ],
    'GET user via gateway (Basic, cached)': [
      { authorization: provider },
      rotating(({ user }) => `/id/users/${user}`, 'GET'),
    ],
  };
  const run = (title, headers, request, duration) =>
    autocannon({
      title,
      url: system.gatewayUrl,
      headers,
      connections: CONNECTIONS,
      duration,
      pipelining: 1,
      ...request,
    });
  for (const [title, [headers, request]] of Object.entries(targets)) await run(`${title} warm-up`, headers, request, 2);
  const results = Object.fromEntries(Object.keys(targets).map((title) => [title, []]));
  // Every write leaves a row version behind on the local server until PostgreSQL vacuums it, so
  // each target runs slower than the one before: rounds go forth and back (ABBA), so that a
  // trend weighs on every target alike.
  for (let round = 0; round < ROUNDS; round++) {
    const order = Object.entries(targets);
    for (const [title, [headers, request]] of round % 2 === 0 ? order : order.reverse())
      results[title].push(await run(title, headers, request, DURATION_S));
  }

  const summary = Object.fromEntries(
    Object.entries(results).map(([title, list]) => {
      const requests = list.reduce((sum, r) => sum + r.requests.total, 0);
      const seconds = list.reduce((sum, r) => sum + r.duration, 0);
      const mean = (pick) => list.reduce((sum, r) => sum + pick(r), 0) / list.length;
      const failures = list.reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0);
      return [
        title,
        {
          rps: requests / seconds,
          p50: mean((r) => r.latency.p50),
          p99: mean((r) => r.latency.p99),
          requests,
          failures,
        },
      ];
    }),
  );
  console.log(
    `\n${CONNECTIONS} connections, ${USERS} users, ${ROUNDS} rounds of ${DURATION_S} s each, node ${process.version}\n`,
  );
  console.log('| benchmark | requests/s | p50 ms | p99 ms | requests | failures |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [title, row] of Object.entries(summary))
    console.log(
      `| ${title} | ${row.rps.toFixed(0)} | ${row.p50.toFixed(1)} | ${row.p99.toFixed(1)} | ${row.requests} | ${row.failures} |`,
    );
  const rps = (title) => summary[title].rps;
  const bySku = rps('POST consumption by SKU {amount:1}') / rps('POST usage by right id {amount:1} (metered)');
  const check = rps('GET entitlement with a balance (check)') / rps('GET user via gateway (Basic, cached)');
  console.log(`\nconsumption by SKU ÷ usage by right id: ${bySku.toFixed(2)} (target >= 0.8)`);
  console.log(`consumption by SKU p99: ${summary['POST consumption by SKU {amount:1}'].p99.toFixed(1)} ms`);
  console.log(`entitlement check with a balance ÷ GET user: ${check.toFixed(2)} (target >= 0.8)`);
  console.log(
    `entitlement check with a balance ÷ with a plain right: ${(rps('GET entitlement with a balance (check)') / rps('GET entitlement with a plain right (check)')).toFixed(2)}`,
  );
  console.log(
    `projected right, in this process: ${plain.bytes.toFixed(0)} bytes plain, ${metered.bytes.toFixed(0)} bytes metered ` +
      `(${PROJECTED} rights)`,
  );
  if (Object.values(summary).some((row) => row.failures > 0)) process.exitCode = 1;
} finally {
  await stop();
}
