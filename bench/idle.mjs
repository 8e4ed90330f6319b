// `npm run bench:idle`: what a whole system spends doing nothing (docs/performance.md). Every
// service as one process (as the images run them; the scheduler ticking every 200 ms, as the
// other benchmarks run it), left alone for 10 s after it is ready, then measured for
// BENCH_IDLE_SECONDS (30): the CPU each service and server used, as % of one core, and the
// database's statements a second (where the local PostgreSQL keeps them: bench/statements.mjs).
// What it shows goes on under load too, beside the work the same cores are needed for.
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, spentSince } from './processes.mjs';
import { resetStatements, statementsSince, statementsTable } from './statements.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { useTestServers, TestSystem } = require(path.join(root, 'libs/testing/dist/index.js'));

const SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);

const servers = await useTestServers();
const system = await TestSystem.start({
  processes: true,
  name: 'bench_idle',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'],
  env: { LOG_LEVEL: 'warn', SCHEDULER_TICK_MS: '200' },
});
try {
  await sleep(10_000); // the wait is the measurement's: starting is not idling
  resetStatements();
  const before = cpuSeconds();
  await sleep(SECONDS * 1000); // the window measured
  const spent = spentSince(before);
  const statements = statementsSince('bench_idle');
  const share = Object.fromEntries(
    Object.entries(spent).map(([name, seconds]) => [name, Number(((100 * seconds) / SECONDS).toFixed(1))]),
  );
  const total = Object.entries(share)
    .filter(([name]) => name !== 'bench')
    .reduce((sum, [, percent]) => sum + percent, 0);
  console.log(`idle for ${SECONDS} s: CPU, % of one core: ${JSON.stringify(share)}`);
  console.log(`all services and servers: ${total.toFixed(1)} % of one core\n`);
  console.log(statementsTable(statements, SECONDS, 'second'));
} finally {
  await system.stop();
  await servers.stop();
}
