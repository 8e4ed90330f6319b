// What a service allocates per request. Preloaded into the services through BENCH_SERVICE_ENV,
// e.g. with `npm run bench:request-path`:
//   BENCH_TARGETS=check BENCH_ROUNDS=1 BENCH_SERVICE_ENV='{"NODE_OPTIONS":"--import '$PWD'/bench/allocations.mjs",
//     "BENCH_ALLOC_OUT":"/tmp/allocations.json"}' npm run bench:request-path
// In the service named BENCH_ALLOC_SERVICE (the gateway unless told) it samples every allocation
// (those already collected included: V8's sampling heap profiler) from BENCH_ALLOC_FROM_S to
// BENCH_ALLOC_TO_S seconds after the process started (3 to 21: a `BENCH_ROUNDS=1` run's load),
// counts the HTTP requests served meanwhile, and writes to BENCH_ALLOC_OUT the bytes allocated
// per request and the functions that allocated most of them. Bytes per request do not move
// with the machine's pace, unlike a rate.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { Session } from 'node:inspector';

const service = process.env.BENCH_ALLOC_SERVICE ?? 'gateway';
if (process.argv[1]?.includes(`/services/${service}/`)) {
  const from = Number(process.env.BENCH_ALLOC_FROM_S ?? 3) * 1000;
  const to = Number(process.env.BENCH_ALLOC_TO_S ?? 21) * 1000;
  let counting = false;
  let requests = 0;
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (event, ...args) {
    if (counting && event === 'request') requests++;
    return emit.call(this, event, ...args);
  };
  const session = new Session();
  session.connect();
  const post = (method, params = {}) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  setTimeout(async () => {
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', {
      samplingInterval: 8192,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    counting = true;
    setTimeout(async () => {
      const { profile } = await post('HeapProfiler.stopSampling');
      counting = false;
      writeFileSync(process.env.BENCH_ALLOC_OUT ?? '/tmp/allocations.json', JSON.stringify(summary(profile), null, 1));
    }, to - from).unref();
  }, from).unref();

  /** Bytes per request in all and by the function that allocated them (its own, not its callees'). */
  function summary(profile) {
    const byFunction = new Map();
    let total = 0;
    const visit = (node) => {
      const { functionName, url, lineNumber } = node.callFrame;
      const name = `${functionName || '(anonymous)'} ${url.replace(/.*\/(node_modules|services|libs)\//, '$1/')}:${lineNumber + 1}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
      total += node.selfSize;
      for (const child of node.children) visit(child);
    };
    visit(profile.head);
    const perRequest = (bytes) => Math.round(bytes / Math.max(requests, 1));
    return {
      requests,
      bytesPerRequest: perRequest(total),
      top: [...byFunction]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 30)
        .map(([name, bytes]) => ({ name, bytesPerRequest: perRequest(bytes) })),
    };
  }
}
