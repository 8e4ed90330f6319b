// `npm run bench:entitlements`: what the gateway's entitlement projection costs (docs/api.md
// "Entitlement checks", docs/decisions/0034; docs/performance.md).
// 1. Memory per projected right, in this process (`--expose-gc`): the projection's own code
//    fed N rights (default 100,000, BENCH_RIGHTS) of N/2 users, 10 SKUs and 1,000 distinct
//    intervals; the heap after a full GC, before and after.
// 2. The load at start in a running system: N ACTIVE rights issued as renewal issues them
//    (2 per user), then the gateway restarted: the time from its start to ready (its
//    projection loaded in pages from the rights service), what it read, and its memory.
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { issueRights, projectedRights, startBenchSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { EntitlementProjection } = require(path.join(root, 'services/gateway/dist/domain/entitlements.js'));

const N = Number(process.env.BENCH_RIGHTS ?? 100_000);
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const MB = 1024 * 1024;

function heapAfterGc() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
}

// 1. Memory per right.
{
  const now = Date.now();
  const rights = projectedRights(N);
  const before = heapAfterGc();
  const projection = new EntitlementProjection();
  const started = performance.now();
  for (const right of rights) projection.apply(right, now);
  const applyMs = performance.now() - started;
  const after = heapAfterGc();
  console.log(
    `projection of ${projection.size} rights in this process: ${((after - before) / MB).toFixed(1)} MB of heap, ` +
      `${Math.round((after - before) / projection.size)} bytes a right; applied in ${applyMs.toFixed(0)} ms`,
  );
}

// 2. The load at start, in a running system.
const { system, stop } = await startBenchSystem({
  name: 'bench_entitlements',
  backends: ['catalog', 'rights'],
  env: {
    LOG_LEVEL: 'info',
  },
});
try {
  await system.seed({ clients: [{ clientId: 'bench-grantor', grantorId: 'B' }], skus: { monthly: {} } });
  await issueRights(system, {
    prefix: 'Sbenchentitlements',
    count: N,
    perCommand: 2,
    start: new Date(Date.now() - 60_000),
    connectIdOf: (c) => `bench-user-${c}`,
  });

  const gateway = system.service('gateway');
  const metric = (text, name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]);
  const scrape = async () => (await fetch(gateway.metricsUrl)).text();
  await gateway.stop();
  const starting = performance.now();
  await gateway.start(600_000);
  const readyS = (performance.now() - starting) / 1000;
  const rebuilt = gateway.logs
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        return null;
      }
    })
    .findLast((line) => line?.msg === 'entitlement projection rebuilt');
  const metrics = await scrape();
  console.log(
    `gateway restarted: ready after ${readyS.toFixed(1)} s; projection read ${rebuilt?.read} rights, holds ` +
      `${metric(metrics, 'entitlements_projection_rights')}, loaded in ${rebuilt?.duration_ms} ms; ` +
      `resident ${(metric(metrics, 'process_resident_memory_bytes') / MB).toFixed(0)} MB, ` +
      `heap used ${(metric(metrics, 'nodejs_heap_size_used_bytes') / MB).toFixed(0)} MB`,
  );
} finally {
  await stop();
}
