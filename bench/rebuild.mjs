// `npm run bench:rebuild`: what the scheduler's periodic rebuild costs a replica as the data
// grows, and how replicas share it (DESIGN.md 10; docs/performance.md). N rights (default
// 100,000, BENCH_RIGHTS) are issued as renewal issues them; then the rebuild of the scheduler
// (its code, against the running rights and subscriptions services) reads them as one replica
// would (all 8 partitions) and as each of two (4 each), every entry already recorded as in a
// running system: entries read, seconds, and the peak resident memory of the rights service,
// which pages through its collection.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { useTestServers, TestSystem, EventCollector, issueRightsInBulk, TEST_INTERNAL_SECRET, testDatabase } = require(
  path.join(root, 'libs/testing/dist/index.js'),
);
const { InternalTokenSigner } = require(path.join(root, 'libs/http/dist/index.js'));
const { rebuildSchedules } = require(path.join(root, 'services/scheduler/dist/app/rebuild.js'));
const { createStores } = require(path.join(root, 'services/scheduler/dist/store/stores.js'));
const { PARTITIONS } = require(path.join(root, 'services/scheduler/dist/domain/due.js'));

const N = Number(process.env.BENCH_RIGHTS ?? 100_000);
const USERS = 1_000;

const servers = await useTestServers();
const system = await TestSystem.start({
  processes: true,
  name: 'bench_rebuild',
  backends: ['catalog', 'rights', 'subscriptions'],
  gateway: true,
  env: {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '0',
    RATE_LIMIT_USER_PER_SECOND: '0',
    RATE_LIMIT_OPEN_PER_SECOND: '0',
  },
});
const database = await testDatabase('bench_rebuild_scheduler');
try {
  const users = Array.from({ length: USERS }, (_, i) => `bench-user-${i}`);
  await system.seed({ clients: [{ clientId: 'bench-grantor', grantorId: 'B' }], users, skus: { monthly: {} } });
  const created = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const issuing = performance.now();
  const end = new Date(Date.now() + 86_400_000).toISOString();
  await issueRightsInBulk(system.amqpUrl, {
    prefix: 'Sbenchrebuild',
    count: N,
    perCommand: 100,
    grantorId: 'B',
    sku: 'monthly',
    timeInterval: `${new Date().toISOString()}/${end}`,
    connectIdOf: (c) => users[c % USERS],
  });
  await created.waitFor((messages) => messages.length >= N, 3_600_000);
  await created.close();
  console.log(`issued ${N} rights in ${((performance.now() - issuing) / 1000).toFixed(1)} s`);

  const urls = { subscriptions: system.service('subscriptions').url, rights: system.service('rights').url };
  const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'scheduler');
  const stores = createStores(database.db);
  const timed = async (partitions) => {
    const started = performance.now();
    const read = await rebuildSchedules(urls, signer, stores, partitions);
    return { partitions, read, seconds: (performance.now() - started) / 1000 };
  };
  const all = Array.from({ length: PARTITIONS }, (_, p) => p);
  // As in a running system, the events have recorded the due items already: a rebuild reads
  // every entry and finds each recorded. A first rebuild records them; the timed ones follow.
  await timed(all);
  const runs = [await timed(all), await timed(all.slice(0, PARTITIONS / 2)), await timed(all.slice(PARTITIONS / 2))];
  const rights = system.processes.get('rights');
  const peak = Math.round(Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${rights.pid}/status`, 'utf8'))[1]) / 1024);
  console.log(`\n| replica | partitions | entries read | seconds | ÷ one replica's seconds |`);
  console.log('|---|---|---:|---:|---:|');
  for (const [i, run] of runs.entries())
    console.log(
      `| ${i === 0 ? 'alone' : `${i} of 2`} | ${run.partitions.join(',')} | ${run.read} | ${run.seconds.toFixed(1)} | ${(run.seconds / runs[0].seconds).toFixed(2)} |`,
    );
  console.log(`\npeak resident memory of the rights service: ${peak} MB`);
} finally {
  await database.drop().catch(() => undefined);
  await system.stop();
  await servers.stop();
}
