// `npm run bench`: throughput and latency of the running system, as ratios measured in
// one run (this machine is noisy; absolute numbers vary from run to run).
// - GET /catalog/skus/{sku} through the gateway versus directly against the catalog;
// - GET /id/users/{connectId} (answered by the gateway itself) with Basic credentials of a
//   client whose verification is cached, and with a Bearer token: the cost of each scheme;
// - the rights API (create, retrieve, list of 1,000, usage), and retrieving a right three
//   ways: through the gateway, directly against the rights service, and from a bare
//   `node:http` server doing one driver `findOne` by `_id` (bench/bare-findone.mjs), plus 16
//   clients reading at once, each with its own credentials;
// - the entitlement check of a user holding 50 rights (docs/api.md) against the gateway's own
//   GET /id/users/{connectId} and against the list of those 50 rights a provider makes without it.
// Rounds alternate between targets so all see the same machine conditions.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startBare, startBenchSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { TEST_INTERNAL_SECRET, TokenIssuer } = require(path.join(root, 'libs/testing/dist/index.js'));
const { InternalTokenSigner } = require(path.join(root, 'libs/http/dist/index.js'));

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

/**
 * Latencies at microsecond resolution (autocannon's are whole milliseconds, too coarse for a
 * p99 of about one): CONNECTIONS keep-alive connections, each sending its next request as the
 * last one ends, for `seconds`; resolves the p50 and p99 in ms.
 */
async function fineLatencies(url, headers, seconds) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const samples = [];
  const until = performance.now() + seconds * 1000;
  const one = () =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      http
        .get(url, { agent, headers }, (response) => {
          response.resume();
          response.on('end', () => {
            if (response.statusCode !== 200) reject(new Error(`${url} answered ${response.statusCode}`));
            samples.push(performance.now() - started);
            resolve();
          });
        })
        .on('error', reject);
    });
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < until) await one();
    }),
  );
  agent.destroy();
  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  return { p50: at(0.5), p99: at(0.99), requests: samples.length };
}

function run(title, url, headers, duration = DURATION_S, request = {}) {
  return autocannon({ title, url, headers, connections: CONNECTIONS, duration, pipelining: 1, ...request });
}

function summarize(results) {
  const requests = results.reduce((sum, r) => sum + r.requests.total, 0);
  const seconds = results.reduce((sum, r) => sum + r.duration, 0);
  const failures = results.reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0);
  const mean = (pick) => results.reduce((sum, r) => sum + pick(r), 0) / results.length;
  return {
    rps: requests / seconds,
    p50: mean((r) => r.latency.p50),
    p99: mean((r) => r.latency.p99),
    requests,
    failures,
  };
}

const stops = [];
const issuer = new TokenIssuer();
await issuer.start();
const { system, stop } = await startBenchSystem({
  // As the images run them: one process per service (the figures are of processes).
  name: 'bench',
  backends: ['catalog', 'rights'],
  // BENCH_SERVICE_ENV: more settings for every service, e.g. '{"OTEL_SDK_DISABLED":"true"}'
  // to measure what tracing costs.
  env: {
    ...issuer.env,
    ...JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}'),
  },
});
try {
  const created = await fetch(`${system.gatewayUrl}/catalog/skus/bench-sku`, {
    method: 'PUT',
    headers: system.adminHeaders({ 'content-type': 'application/json' }),
    body: JSON.stringify({ name: 'Benchmark SKU', announceOnUsage: true }),
  });
  if (created.status !== 201) throw new Error(`cannot create the benchmark SKU: ${created.status}`);
  const client = await fetch(`${system.gatewayUrl}/admin/clients/bench-app`, {
    method: 'PUT',
    headers: system.adminHeaders({ 'content-type': 'application/json' }),
    body: JSON.stringify({ secret: 'bench-app-secret', grantorId: 'bench' }),
  });
  const user = await fetch(`${system.gatewayUrl}/id/users/bench-user`, {
    method: 'PUT',
    headers: system.adminHeaders(),
  });
  if (client.status !== 201 || user.status !== 201) throw new Error('cannot create the benchmark client and user');
  const appBasic = `Basic ${Buffer.from('bench-app:bench-app-secret').toString('base64')}`;
  const appBearer = `Bearer ${await issuer.token('bench-app', 'bench-user', { scope: 'id.user.right.read' })}`;
  // Valid for the whole run (services' own tokens live 60 s), one for each service called directly.
  const benchSigner = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'bench', 3600);
  const benchPrincipal = {
    clientId: 'bench',
    grantorId: null,
    admin: true,
    scheme: 'basic',
    scopes: [],
    subject: null,
  };
  const internalTokenFor = (service) => benchSigner.tokenFor(benchPrincipal, service);
  const targets = {
    'GET sku via gateway (Basic)': [`${system.gatewayUrl}/catalog/skus/bench-sku`, system.adminHeaders()],
    'GET sku direct to catalog': [
      `${system.service('catalog').url}/catalog/skus/bench-sku`,
      { 'x-internal-token': await internalTokenFor('catalog') },
    ],
    'GET user via gateway (Basic, cached)': [`${system.gatewayUrl}/id/users/bench-user`, { authorization: appBasic }],
    'GET user via gateway (Bearer)': [`${system.gatewayUrl}/id/users/bench-user`, { authorization: appBearer }],
  };
  // Rights through the gateway: a right to read and use, and a user holding 1,000 rights.
  const rightsHeaders = { authorization: appBasic, 'content-type': 'application/json' };
  const interval = `${new Date(Date.now() - 60_000).toISOString()}/P30D`;
  const rightBody = JSON.stringify({ sku: 'bench-sku', grantorId: 'bench', timeInterval: interval, state: 'ACTIVE' });
  const one = await fetch(`${system.gatewayUrl}/id/users/bench-user/rights`, {
    method: 'POST',
    headers: rightsHeaders,
    body: rightBody,
  });
  const rightId = (await one.json()).rightId;
  /** Registers a user holding `count` rights of the SKU, created `inFlight` at a time. */
  const userHolding = async (user, count, inFlight) => {
    await fetch(`${system.gatewayUrl}/id/users/${user}`, { method: 'PUT', headers: system.adminHeaders() });
    for (let made = 0; made < count; made += inFlight) {
      await Promise.all(
        Array.from({ length: Math.min(inFlight, count - made) }, () =>
          fetch(`${system.gatewayUrl}/id/users/${user}/rights`, {
            method: 'POST',
            headers: rightsHeaders,
            body: rightBody,
          }).then((r) => {
            if (r.status !== 201) throw new Error(`cannot create the rights of ${user}: ${r.status}`);
          }),
        ),
      );
    }
  };
  await userHolding('bench-list', 1_000, 10);
  // docs/api.md "Entitlement checks": a user holding 50 rights of the SKU, checked in one call
  // (from the gateway's projection) and listed as a provider would list them without it.
  await userHolding('bench-fifty', 50, 10);
  // The usual case: a user holding one right of the SKU (bench-user gets many from the create target).
  await userHolding('bench-one', 1, 1);
  // Other users' rights: a list must cost what the user holds, not what the collection holds.
  const OTHER_USERS = Number(process.env.BENCH_OTHER_USERS ?? 10);
  for (let u = 0; u < OTHER_USERS; u++) await userHolding(`bench-other-${u}`, 1_008, 16);
  /**
   * Lets the relay publish the events of the writes so far, and their consumers take them,
   * so that a write target's aftermath is not measured as the next target's cost.
   */
  const settle = async () => {
    for (let waited = 0; waited < 300; waited++) {
      const metrics = await (await fetch(`${system.service('rights').url}/metrics`)).text();
      if (/outbox_pending_documents\{collection="rights"[^}]*\} 0\b/.test(metrics)) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  };
  await settle();
  // 16 API clients of the same grantor, one per connection (the herd).
  const readers = [];
  for (let i = 0; i < 16; i++) {
    const created = await fetch(`${system.gatewayUrl}/admin/clients/bench-reader-${i}`, {
      method: 'PUT',
      headers: system.adminHeaders({ 'content-type': 'application/json' }),
      body: JSON.stringify({ secret: `bench-reader-secret-${i}`, grantorId: 'bench' }),
    });
    if (created.status !== 201) throw new Error(`cannot create reader ${i}: ${created.status}`);
    readers.push(`Basic ${Buffer.from(`bench-reader-${i}:bench-reader-secret-${i}`).toString('base64')}`);
  }
  const bare = await startBare(system.mongoUrlFor('rights'));
  stops.push(bare.stop);
  targets['POST right (create)'] = [
    `${system.gatewayUrl}/id/users/bench-user/rights`,
    rightsHeaders,
    { method: 'POST', body: rightBody },
  ];
  targets['GET right (retrieve)'] = [
    `${system.gatewayUrl}/id/users/bench-user/rights/${rightId}`,
    { authorization: appBasic },
  ];
  // docs/api.md: a signed right token of the same right (≥ 0.8× the retrieve rate).
  targets['GET right token (signed, through the gateway)'] = [
    `${system.gatewayUrl}/id/users/bench-user/rights/${rightId}/token`,
    { authorization: appBasic },
  ];
  // docs/api.md: a create retried with its Idempotency-Key, answered from the kept response
  // (≥ 0.9× the retrieve rate). The first request with the key runs below.
  const replayHeaders = { ...rightsHeaders, 'idempotency-key': 'bench-replay' };
  await fetch(`${system.gatewayUrl}/id/users/bench-user/rights`, {
    method: 'POST',
    headers: replayHeaders,
    body: rightBody,
  });
  targets['POST right again with its Idempotency-Key (replay)'] = [
    `${system.gatewayUrl}/id/users/bench-user/rights`,
    replayHeaders,
    { method: 'POST', body: rightBody },
  ];
  targets['GET right direct to rights (internal token)'] = [
    `${system.service('rights').url}/id/users/bench-user/rights/${rightId}`,
    { 'x-internal-token': await internalTokenFor('rights') },
  ];
  targets['GET right from a bare findOne server'] = [`${bare.url}/${rightId}`, {}];
  let nextReader = 0;
  targets['GET right, 16 clients with their own credentials'] = [
    `${system.gatewayUrl}/id/users/bench-user/rights/${rightId}`,
    {},
    { setupClient: (client) => client.setHeaders({ authorization: readers[nextReader++ % readers.length] }) },
  ];
  targets['GET rights of a user holding 1,000 (limit=1000)'] = [
    `${system.gatewayUrl}/id/users/bench-list/rights?grantorId=bench&limit=1000`,
    { authorization: appBasic },
    // One connection: each response carries 1,000 rights.
    { connections: 1 },
  ];
  targets['GET entitlement of a user holding 1 right (check)'] = [
    `${system.gatewayUrl}/id/users/bench-one/entitlements/bench-sku`,
    { authorization: appBasic },
  ];
  // The same check by the user's app: its token verified once, then remembered (docs/identity-providers.md).
  const oneBearer = await issuer.token('bench-app', 'bench-one', {
    scope: 'id.user.right.read',
    exp: Math.floor(Date.now() / 1000) + 3600,
  });
  targets['GET entitlement of a user holding 1 right (check, Bearer)'] = [
    `${system.gatewayUrl}/id/users/bench-one/entitlements/bench-sku`,
    { authorization: `Bearer ${oneBearer}` },
  ];
  targets['GET entitlement of a user holding 50 rights (check)'] = [
    `${system.gatewayUrl}/id/users/bench-fifty/entitlements/bench-sku`,
    { authorization: appBasic },
  ];
  targets['GET rights of a user holding 50 (the list a provider makes without the check)'] = [
    `${system.gatewayUrl}/id/users/bench-fifty/rights?grantorId=bench&limit=100`,
    { authorization: appBasic },
  ];
  targets['POST usage (repeat use, 204)'] = [
    `${system.gatewayUrl}/id/users/bench-user/rights/${rightId}/usage`,
    { authorization: appBasic },
    { method: 'POST' },
  ];

  // Only the create writes: what it leaves to publish and consume is let settle after it.
  const writes = new Set(['POST right (create)']);
  for (const [title, [url, headers, request]] of Object.entries(targets)) {
    await run(`${title} warm-up`, url, headers, 2, request);
    if (writes.has(title)) await settle();
  }
  const results = Object.fromEntries(Object.keys(targets).map((title) => [title, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [title, [url, headers, request]] of Object.entries(targets)) {
      results[title].push(await run(title, url, headers, DURATION_S, request));
      if (writes.has(title)) await settle();
    }
  }

  // docs/api.md: the check's p99 against GET user's, at microsecond resolution, alternating.
  const fine = { user: [], check: [] };
  const fineTargets = {
    user: targets['GET user via gateway (Basic, cached)'],
    check: targets['GET entitlement of a user holding 1 right (check)'],
  };
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, [url, headers]] of Object.entries(fineTargets))
      fine[name].push(await fineLatencies(url, headers, DURATION_S));
  const fineMean = (name, key) => fine[name].reduce((sum, r) => sum + r[key], 0) / fine[name].length;

  const rows = Object.entries(results).map(([title, list]) => ({ title, ...summarize(list) }));
  const row = (title) => rows.find((r) => r.title === title);
  const [viaGateway, direct, userBasic, userBearer] = rows;
  const retrieve = row('GET right (retrieve)');
  const herd = row('GET right, 16 clients with their own credentials');
  console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_S} s each, node ${process.version}\n`);
  console.log('| benchmark | requests/s | p50 ms | p99 ms | requests | failures |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.title} | ${row.rps.toFixed(0)} | ${row.p50.toFixed(1)} | ${row.p99.toFixed(1)} | ${row.requests} | ${row.failures} |`,
    );
  }
  const ratio = viaGateway.rps / direct.rps;
  console.log(
    `\ngateway/direct throughput ratio: ${ratio.toFixed(2)}; p50 added by the gateway: ${(viaGateway.p50 - direct.p50).toFixed(1)} ms`,
  );
  console.log(
    `Bearer/Basic (cached) throughput ratio on the same route: ${(userBearer.rps / userBasic.rps).toFixed(2)}`,
  );
  const ratios = {
    retrieveGatewayToBare: retrieve.rps / row('GET right from a bare findOne server').rps,
    retrieveGatewayToDirect: retrieve.rps / row('GET right direct to rights (internal token)').rps,
    catalogGatewayToDirect: ratio,
    herdP99ToP50: herd.p99 / herd.p50,
    tokenToRetrieve: row('GET right token (signed, through the gateway)').rps / retrieve.rps,
    replayToRetrieve: row('POST right again with its Idempotency-Key (replay)').rps / retrieve.rps,
    checkToUser: row('GET entitlement of a user holding 1 right (check)').rps / userBasic.rps,
    bearerCheckToBasicCheck:
      row('GET entitlement of a user holding 1 right (check, Bearer)').rps /
      row('GET entitlement of a user holding 1 right (check)').rps,
    checkP99ToUserP99: fineMean('check', 'p99') / fineMean('user', 'p99'),
    check50ToUser: row('GET entitlement of a user holding 50 rights (check)').rps / userBasic.rps,
    checkToList:
      row('GET entitlement of a user holding 50 rights (check)').rps /
      row('GET rights of a user holding 50 (the list a provider makes without the check)').rps,
  };
  console.log(`retrieve right, gateway/bare findOne: ${ratios.retrieveGatewayToBare.toFixed(2)} (target >= 0.6)`);
  console.log(`retrieve right, gateway/direct: ${ratios.retrieveGatewayToDirect.toFixed(2)} (target >= 0.7)`);
  console.log(`catalog read, gateway/direct: ${ratios.catalogGatewayToDirect.toFixed(2)} (target >= 0.7)`);
  console.log(`16 clients with their own credentials, p99/p50: ${ratios.herdP99ToP50.toFixed(1)} (target <= 5)`);
  console.log(`right token ÷ retrieve right: ${ratios.tokenToRetrieve.toFixed(2)} (target >= 0.8)`);
  console.log(`idempotent replay ÷ retrieve right: ${ratios.replayToRetrieve.toFixed(2)} (target >= 0.9)`);
  console.log(`entitlement check ÷ GET user: ${ratios.checkToUser.toFixed(2)} (target >= 0.8)`);
  console.log(`entitlement check, Bearer ÷ Basic: ${ratios.bearerCheckToBasicCheck.toFixed(2)} (target >= 0.8)`);
  console.log(
    `entitlement check p99 ÷ GET user p99: ${ratios.checkP99ToUserP99.toFixed(2)} (target <= 1.5; ` +
      `µs resolution, node:http client: check p50/p99 ${fineMean('check', 'p50').toFixed(2)}/${fineMean('check', 'p99').toFixed(2)} ms, ` +
      `user ${fineMean('user', 'p50').toFixed(2)}/${fineMean('user', 'p99').toFixed(2)} ms)`,
  );
  console.log(`entitlement check ÷ list of 50 rights: ${ratios.checkToList.toFixed(1)} (target >= 5)`);
  console.log(`entitlement check of 50 rights (a 7 kB answer) ÷ GET user: ${ratios.check50ToUser.toFixed(2)}`);
  mkdirSync(path.join(root, 'bench/results'), { recursive: true });
  const file = path.join(root, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ connections: CONNECTIONS, rounds: ROUNDS, durationS: DURATION_S, rows, ratios }, null, 2),
  );
  console.log(`results: ${path.relative(root, file)}`);
  if (rows.some((row) => row.failures > 0)) process.exitCode = 1;
} finally {
  for (const end of stops) end();
  await stop();
  await issuer.close();
}
