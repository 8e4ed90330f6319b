// `npm run bench:staff-writes`: what the audit log costs a staff member's change (docs/audit.md).
// The services as processes trust one test issuer; an acme `write` agent (Bearer, audited) and
// acme's own API client (Basic, not audited) each suspend and activate BENCH_STAFF_RIGHTS rights
// (default 100) of one user, BENCH_STAFF_WRITES changes a run (default 1,500), 16 at a time, in
// the order A, B, B, A (the database slows as a run goes on). Prints each writer's mean rate,
// of answers and of changes answered and relayed (a run's events all out: the rate a writer
// can keep up, where answers alone leave part of the work behind them), and their ratios. The
// promise is about the same agent's writes with and without the log: run this file on the
// commit before the log (a `git worktree`) and on today's, in the same hour, and compare the
// agent's rates (docs/performance.md). Beside the rates, the CPU each process spent per change
// (until a run's events were received from the broker): on two busy cores, where the log's cost
// goes, and a figure less noisy than a rate; and the database's statements per change of each
// writer (bench/statements.mjs, where the local PostgreSQL keeps them). BENCH_STAFF_RATE: both
// writers held to that many changes a second, to compare their CPU at the same pace (below).
// BENCH_SERVICE_ENV: more settings for every service, e.g.
// '{"NODE_OPTIONS":"--cpu-prof --cpu-prof-dir=/tmp/prof"}'.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resetStatements, statementsSince, statementsTable } from './statements.mjs';
import { cpuMeter, gatewayCaller, pooled, processesOf, startBenchSystem, TestSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { EventCollector, TokenIssuer } = await import(path.join(root, 'libs/testing/dist/index.js'));
const RIGHTS = Number(process.env.BENCH_STAFF_RIGHTS ?? 100);
const WRITES = Number(process.env.BENCH_STAFF_WRITES ?? 1_500);
const AT_ONCE = 16;
/**
 * BENCH_STAFF_RATE: changes a second both writers are held to (a steady stream, 16 at a time
 * at most), below what either can keep up: the CPU per change then compares the same work at
 * the same pace, where at full speed a saturated system batches more of its own work (its
 * relays clear more events per write) and the faster writer is credited for it.
 */
const PACE = process.env.BENCH_STAFF_RATE ? Number(process.env.BENCH_STAFF_RATE) : undefined;

const issuer = new TokenIssuer();
await issuer.start();
const { system, stop } = await startBenchSystem({
  name: 'bench_staff_writes',
  backends: ['catalog', 'rights'],
  env: { ...issuer.env, ...JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') },
});
const ACME = TestSystem.clientAuthorization('acme');

const call = gatewayCaller(system.gatewayUrl);

try {
  await system.seed({ clients: [{ clientId: 'acme', grantorId: 'acme' }], users: ['heavy'], skus: { news: {} } });
  const rightIds = [];
  for (let i = 0; i < RIGHTS; i++) {
    const right = await call('POST', '/id/users/heavy/rights', ACME, {
      sku: 'news',
      grantorId: 'acme',
      state: 'ACTIVE',
      timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z',
    });
    rightIds.push(right.rightId);
  }
  const agent = `Bearer ${await issuer.staffToken('agent', 'write', ['acme'])}`;
  const writers = {
    'acme write agent (Bearer, audited)': { authorization: agent, headers: { 'x-audit-reason': 'bench' } },
    "acme's client (Basic, not audited)": { authorization: ACME, headers: {} },
  };
  // Every right is ACTIVE between runs: a run suspends and activates each in turn.
  const perRun = Math.floor(WRITES / (2 * RIGHTS)) * 2 * RIGHTS || 2 * RIGHTS;
  const rates = Object.fromEntries(Object.keys(writers).map((name) => [name, []]));
  // The same changes until their events are all out (the log's included): a rate a writer can
  // keep up, where the rate of answers alone leaves part of each change's work behind it.
  const sustained = Object.fromEntries(Object.keys(writers).map((name) => [name, []]));
  const cpu = Object.fromEntries(Object.keys(writers).map((name) => [name, {}]));
  const { cpuNow, spent } = cpuMeter(processesOf(system, ['gateway', 'rights']));
  // Until a run's events are all out: each change's right event, and the agent's audit.recorded.
  // Counted as received from the broker: asking the services (their outbox gauges read every
  // pending key at each scrape) would add its own hundreds of statements to every run's count.
  const rightsEvents = await EventCollector.start(system.amqpUrl, 'rights.events', '#');
  const auditEvents = await EventCollector.start(system.amqpUrl, 'platform.events', 'audit.recorded');
  const distinct = (collector) => new Set(collector.messages.map(({ body }) => body.id)).size;
  const relayed = async (expected) => {
    for (const [collector, count] of [
      [rightsEvents, expected.rights],
      [auditEvents, expected.audit],
    ])
      await collector.waitFor(() => distinct(collector) >= count, 300_000);
  };
  const expected = { rights: 0, audit: 0 };
  // The code before the audit log (run beside it) records nothing: its agent's writes only.
  const logged = (await fetch(`${system.gatewayUrl}/admin/audit`, { headers: system.adminHeaders() })).status !== 404;
  // The database's statements of each writer's runs (bench/statements.mjs), summed.
  const statements = Object.fromEntries(Object.keys(writers).map((name) => [name, []]));
  for (const [name, { authorization, headers }] of [...Object.entries(writers), ...Object.entries(writers).reverse()]) {
    resetStatements();
    const before = cpuNow();
    const ms = await pooled(
      perRun,
      AT_ONCE,
      (i) => {
        const change = Math.floor(i / RIGHTS) % 2 === 0 ? 'suspend' : 'activate';
        return call(
          'POST',
          `/id/users/heavy/rights/${rightIds[i % RIGHTS]}/${change}`,
          authorization,
          undefined,
          headers,
        );
      },
      { perSecond: PACE },
    );
    rates[name].push((perRun / ms) * 1000);
    const answered = Date.now();
    expected.rights += perRun;
    if (logged && headers['x-audit-reason']) expected.audit += perRun;
    await relayed(expected);
    sustained[name].push((perRun / (ms + Date.now() - answered)) * 1000);
    for (const [process, seconds] of Object.entries(spent(before, cpuNow())))
      cpu[name][process] = (cpu[name][process] ?? 0) + (seconds * 1000) / (2 * perRun);
    // The relays clear what they published: counted with this run, not the next.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    statements[name].push(...(statementsSince('bench_staff_writes') ?? []));
  }
  const mean = (of) => (name) => of[name].reduce((sum, rate) => sum + rate, 0) / of[name].length;
  for (const [what, of] of [
    ['answered', rates],
    ['answered and relayed', sustained],
  ]) {
    for (const name of Object.keys(writers))
      console.log(
        `${name}, ${what}: ${mean(of)(name).toFixed(0)} changes/s (${of[name].map((rate) => rate.toFixed(0)).join(', ')})`,
      );
    const [audited, plain] = Object.keys(writers).map(mean(of));
    console.log(`agent ÷ client, ${what}: ${(audited / plain).toFixed(2)}`);
  }
  for (const [name, processes] of Object.entries(cpu)) {
    const total = Object.values(processes).reduce((sum, ms) => sum + ms, 0);
    const each = Object.entries(processes).map(([process, ms]) => `${process} ${ms.toFixed(2)}`);
    console.log(`${name}: CPU ms per change ${total.toFixed(2)} (${each.join(', ')})`);
  }
  for (const [name, rows] of Object.entries(statements)) {
    const summed = new Map();
    for (const row of rows) {
      const key = `${row.database}\t${row.collection}\t${row.verb}`;
      const sum = summed.get(key) ?? { ...row, calls: 0, rows: 0, ms: 0 };
      summed.set(key, { ...sum, calls: sum.calls + row.calls, rows: sum.rows + row.rows, ms: sum.ms + row.ms });
    }
    const table = [...summed.values()].sort((a, b) => b.calls - a.calls);
    console.log(`\n${name}, the database's statements (both runs, until relayed):\n`);
    console.log(statementsTable(rows.length ? table : null, 2 * perRun, 'change'));
  }
  await rightsEvents.close();
  await auditEvents.close();
} finally {
  await stop();
  await issuer.close();
}
