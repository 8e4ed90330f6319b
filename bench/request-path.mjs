// `npm run bench:request-path`: the request path alone, and where its CPU goes. Retrieving a
// right through the gateway against the bare baseline (bench/bare-findone.mjs) on the same
// document, alternating, after the gateway path is warm; for each, the CPU each process spent
// per request (from /proc: the gateway, the rights service, FerretDB, PostgreSQL, the baseline,
// this load generator). Quicker than `npm run bench` for trying a change to the path; its
// ratio is the same figure (docs/performance.md). Beside them, the entitlement check of the
// same user (answered from the gateway's memory) against a bare `node:http` server answering
// the check's own document as a constant (bench/bare-constant.mjs): what every request's path
// costs when the work itself is a few microseconds.
// BENCH_SERVICE_ENV: more settings for every service, e.g. '{"OTEL_SDK_DISABLED":"true"}', or
// '{"NODE_OPTIONS":"--cpu-prof --cpu-prof-dir=/tmp/prof"}' for a CPU profile of each service.
// BENCH_TARGETS: the pairs to run, `retrieve`, `check` or both (the default: `retrieve,check`).
// BENCH_PIN=1: the gateway alone on the second core, everything this benchmark starts (the load
// generator, the baselines, the other services) on the first: the check's rate is then the
// gateway's own CPU per check, less disturbed by what shares its core (`taskset`, util-linux).
// BENCH_SERVICE_ENV with bench/allocations.mjs: what the gateway allocates per request.
import { execFileSync } from 'node:child_process';
import autocannon from 'autocannon';
import { cpuMeter, pidsOf, startBare, startBareConstant, startBenchSystem, startExpressConstant } from './system.mjs';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
// BENCH_RATE: requests a second for every target, below what each keeps up: the CPU each
// process spends per request at the same pace (steadier than a rate at full speed).
const pace = process.env.BENCH_RATE ? { overallRate: Number(process.env.BENCH_RATE) } : {};
const PIN = process.env.BENCH_PIN === '1';
const pin = (pid, cpu) => execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', String(cpu), String(pid)]);
// What this process starts inherits its core.
if (PIN) pin(process.pid, 0);
const { system, stop } = await startBenchSystem({
  name: 'request-path',
  backends: ['catalog', 'rights'],
  env: JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}'),
});
const stops = [stop];
if (PIN) pin(system.service('gateway').pid, 1);
try {
  const admin = (method, url, body) =>
    fetch(`${system.gatewayUrl}${url}`, {
      method,
      headers: system.adminHeaders({ 'content-type': 'application/json' }),
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  await admin('PUT', '/catalog/skus/bench-sku', { name: 'Benchmark SKU' });
  await admin('PUT', '/admin/clients/bench-app', { secret: 'bench-app-secret', grantorId: 'bench' });
  await admin('PUT', '/id/users/bench-user');
  const authorization = `Basic ${Buffer.from('bench-app:bench-app-secret').toString('base64')}`;
  const created = await fetch(`${system.gatewayUrl}/id/users/bench-user/rights`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({
      sku: 'bench-sku',
      grantorId: 'bench',
      timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/P30D`,
      state: 'ACTIVE',
    }),
  });
  if (created.status !== 201) throw new Error(`cannot create the benchmark right: ${created.status}`);
  const { rightId } = await created.json();
  const bare = await startBare(system.mongoUrlFor('rights'));
  stops.unshift(bare.stop);
  // The check answers from the gateway's projection once the right's event has reached it.
  const checkUrl = `${system.gatewayUrl}/id/users/bench-user/entitlements/bench-sku`;
  let check;
  for (let waited = 0; waited < 100; waited++) {
    check = await fetch(checkUrl, { headers: { authorization } });
    if (check.status === 200 && (await check.clone().json()).entitled) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (check.status !== 200) throw new Error(`the check answered ${check.status}`);
  const checkBody = await check.text();
  const constant = await startBareConstant(check.headers.get('content-type'), checkBody);
  stops.unshift(constant.stop);
  const framework = await startExpressConstant(check.headers.get('content-type'), checkBody);
  stops.unshift(framework.stop);

  const pairs = {
    retrieve: {
      gateway: { url: `${system.gatewayUrl}/id/users/bench-user/rights/${rightId}`, headers: { authorization } },
      bare: { url: `${bare.url}/${rightId}`, headers: {} },
    },
    check: {
      check: { url: checkUrl, headers: { authorization } },
      'bare constant': { url: constant.url, headers: {} },
      // The same path as the check's, so the app's router matches as it would.
      'express constant': { url: `${framework.url}/id/users/bench-user/entitlements/bench-sku`, headers: {} },
    },
  };
  const chosen = (process.env.BENCH_TARGETS ?? 'retrieve,check').split(',');
  const targets = Object.assign({}, ...chosen.map((pair) => pairs[pair]));
  const processes = () => ({
    gateway: [system.service('gateway').pid],
    rights: [system.service('rights').pid],
    ferretdb: pidsOf('ferretdb'),
    postgres: pidsOf('postgres'),
    bare: [bare.pid],
    'bare constant': [constant.pid],
    'express constant': [framework.pid],
  });
  const { cpuNow, spent } = cpuMeter(processes);
  const run = (target, duration) =>
    autocannon({ ...targets[target], connections: CONNECTIONS, duration, pipelining: 1, ...pace });

  // Warm: the gateway path long enough for both processes' code to be optimized.
  for (const [target, seconds] of Object.entries({
    gateway: 8,
    bare: 2,
    check: 4,
    'bare constant': 2,
    'express constant': 2,
  }))
    if (targets[target]) await run(target, seconds);
  const totals = Object.fromEntries(
    Object.keys(targets).map((target) => [target, { requests: 0, seconds: 0, p50: [], p99: [], cpu: {} }]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of Object.keys(targets)) {
      const before = cpuNow();
      const load = process.cpuUsage();
      const result = await run(target, DURATION_S);
      const after = cpuNow();
      const used = process.cpuUsage(load);
      const total = totals[target];
      total.requests += result.requests.total;
      total.seconds += result.duration;
      total.p50.push(result.latency.p50);
      total.p99.push(result.latency.p99);
      for (const [name, seconds] of Object.entries(spent(before, after)))
        total.cpu[name] = (total.cpu[name] ?? 0) + seconds;
      total.cpu['load generator'] = (total.cpu['load generator'] ?? 0) + (used.user + used.system) / 1e6;
    }
  }

  const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
  console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_S} s, node ${process.version}\n`);
  console.log('| target | requests/s | p50 ms | p99 ms | CPU ms per request, by process |');
  console.log('|---|---:|---:|---:|---|');
  for (const [target, total] of Object.entries(totals)) {
    const perRequest = Object.entries(total.cpu)
      .filter(([, seconds]) => seconds > 0.05)
      .sort((a, b) => b[1] - a[1])
      .map(([name, seconds]) => `${name} ${((seconds * 1000) / total.requests).toFixed(3)}`)
      .join(', ');
    console.log(
      `| ${target} | ${(total.requests / total.seconds).toFixed(0)} | ${mean(total.p50).toFixed(1)} | ${mean(total.p99).toFixed(1)} | ${perRequest} |`,
    );
  }
  const rate = (target) => totals[target].requests / totals[target].seconds;
  const gateway = totals.gateway;
  if (gateway)
    console.log(
      `\nretrieve right, gateway/bare findOne: ${(rate('gateway') / rate('bare')).toFixed(2)} (target >= 0.6); ` +
        `gateway p99 ÷ p50: ${(mean(gateway.p99) / mean(gateway.p50)).toFixed(1)} (target <= 3)`,
    );
  if (totals.check)
    console.log(
      `entitlement check, gateway/bare constant: ${(rate('check') / rate('bare constant')).toFixed(2)} (target >= 0.25); ` +
        `Express with no middleware/bare constant: ${(rate('express constant') / rate('bare constant')).toFixed(2)}; ` +
        `check/Express: ${(rate('check') / rate('express constant')).toFixed(2)}`,
    );
} finally {
  for (const stopOne of stops) await stopOne();
}
