// `npm run bench:rebuild`: what the scheduler's periodic rebuild costs a replica as the data
// grows, and how replicas share it (docs/operations.md; docs/performance.md). N rights (default
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
import { issueRights, startBenchSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { TEST_INTERNAL_SECRET, testDatabase } = require(path.join(root, 'libs/testing/dist/index.js'));
const { InternalTokenSigner } = require(path.join(root, 'libs/http/dist/index.js'));
const { rebuildSchedules } = require(path.join(root, 'services/scheduler/dist/app/rebuild.js'));
const { createStores } = require(path.join(root, 'services/scheduler/dist/store/stores.js'));
const { PARTITIONS } = require(path.join(root, 'services/scheduler/dist/domain/due.js'));

const N = Number(process.env.BENCH_RIGHTS ?? 100_000);
const USERS = 1_000;

const { system, stop } = await startBenchSystem({
  name: 'bench_rebuild',
  backends: ['catalog', 'rights', 'subscriptions'],
  gateway: true,
});
const database = await testDatabase('bench_rebuild_scheduler');
try {
  const users = Array.from({ length: USERS }, (_, i) => `bench-user-${i}`);
  await system.seed({ clients: [{ clientId: 'bench-grantor', grantorId: 'B' }], users, skus: { monthly: {} } });
  await issueRights(system, {
    prefix: 'Sbenchrebuild',
    count: N,
    perCommand: 100,
    connectIdOf: (c) => users[c % USERS],
  });

  const urls = { subscriptions: system.service('subscriptions').url, rights: system.service('rights').url };
  const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'scheduler');
  const stores = createStores(database.db);
  const timed = async (partitions) => {
    const started = performance.now();
    const read = await rebuildSchedules({ urls, signer, stores, partitions });
    return { partitions, read, seconds: (performance.now() - started) / 1000 };
  };
  const all = Array.from({ length: PARTITIONS }, (_, p) => p);
  // As in a running system, the events have recorded the due items already: a rebuild reads
  // every entry and finds each recorded. A first rebuild records them; the timed ones follow.
  await timed(all);
  const runs = [await timed(all), await timed(all.slice(0, PARTITIONS / 2)), await timed(all.slice(PARTITIONS / 2))];
  const rights = system.services.get('rights');
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
  await stop();
}
