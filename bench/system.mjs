// What a benchmark of the running system starts with: the test servers, and the services as
// real processes with every rate limit off (a benchmark measures the work, not the limiter)
// and quiet logs; stopped on SIGINT or SIGTERM too.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import readline from 'node:readline';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
export const { useTestServers, TestSystem, EventCollector, issueRightsInBulk } = require(
  path.join(root, 'libs/testing/dist/index.js'),
);

/** Starts the system `options` describes (TestSystem options; `env` adds to the defaults); resolves it and `stop`. */
export async function startBenchSystem(options) {
  const servers = await useTestServers();
  const system = await TestSystem.start({
    processes: true,
    ...options,
    env: {
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '0',
      RATE_LIMIT_USER_PER_SECOND: '0',
      RATE_LIMIT_OPEN_PER_SECOND: '0',
      ...options.env,
    },
  });
  const stop = () => system.stop().finally(() => servers.stop());
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void stop().finally(() => process.exit(1)));
  // An error thrown outside a bench's `try` (a timer's callback) would leave the services running.
  process.once('uncaughtException', (error) => {
    console.error(error);
    void stop().finally(() => process.exit(1));
  });
  return { system, stop };
}

/** Starts `script` of bench/ with `args` in its own process; resolves the URL it prints, its process id and a stop function. */
async function startBareProcess(script, args) {
  const child = spawn(process.execPath, [path.join(root, 'bench', script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = await once(readline.createInterface({ input: child.stdout }), 'line');
  return { url: `http://127.0.0.1:${JSON.parse(line).port}`, pid: child.pid, stop: () => child.kill('SIGTERM') };
}

/**
 * Starts the bare baseline of the request path (bench/bare-findone.mjs: `node:http` and one
 * driver `findOne`) in its own process on `collection` of `mongoUrl`; resolves its URL, its
 * process id and a stop function.
 */
export const startBare = (mongoUrl, collection = 'rights') =>
  startBareProcess('bare-findone.mjs', [mongoUrl, collection]);

/**
 * Starts the bare constant server (bench/bare-constant.mjs: `node:http` answering `body` as
 * `mediaType` to every request) in its own process; resolves as `startBare` does.
 */
export const startBareConstant = (mediaType, body) =>
  startBareProcess('bare-constant.mjs', [mediaType, Buffer.from(body).toString('base64')]);

/** Starts the Express floor of the same (bench/express-constant.mjs); resolves as `startBare` does. */
export const startExpressConstant = (mediaType, body) =>
  startBareProcess('express-constant.mjs', [mediaType, Buffer.from(body).toString('base64')]);

/**
 * Issues `count` rights of grantor B's SKU `monthly`, ending in a day, as renewals do
 * (`rights.issue` commands, `perCommand` rights each), and waits for every `right.created`;
 * logs how long it took.
 */
export async function issueRights(system, { prefix, count, perCommand, start = new Date(), connectIdOf }) {
  const created = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const issuing = performance.now();
  const end = new Date(Date.now() + 86_400_000).toISOString();
  await issueRightsInBulk(system.amqpUrl, {
    prefix,
    count,
    perCommand,
    grantorId: 'B',
    sku: 'monthly',
    timeInterval: `${start.toISOString()}/${end}`,
    connectIdOf,
  });
  await created.waitFor((messages) => messages.length >= count, 3_600_000);
  await created.close();
  console.log(`issued ${count} rights in ${((performance.now() - issuing) / 1000).toFixed(1)} s`);
}

/**
 * `count` rights as the gateway's entitlement projection holds them (docs/decisions/0034): of
 * count/2 users, 20 grantors, 10 SKUs and 1,000 distinct intervals of a month; `metered`, each
 * with a quantity and what remains of it. For measuring the projection's memory.
 */
export function projectedRights(count, { metered = false } = {}) {
  const now = Date.now();
  const day = 86_400_000;
  const intervals = Array.from({ length: 1_000 }, (_, i) => {
    const start = new Date(Math.floor((now - (i % 30) * day) / 1000) * 1000);
    const end = new Date(start.getTime() + 31 * day);
    return `${start.toISOString().replace('.000Z', 'Z')}/${end.toISOString().replace('.000Z', 'Z')}`;
  });
  return Array.from({ length: count }, (_, i) => ({
    rightId: `R${i.toString(36).padStart(12, '0')}${'x'.repeat(14)}`,
    connectId: `user-${Math.floor(i / 2)}@example.com`,
    sequence: 1,
    state: 'ACTIVE',
    timeInterval: intervals[i % intervals.length],
    grantorId: `grantor-${i % 20}`,
    serviceProviderId: i % 3 === 0 ? `provider-${i % 7}` : null,
    sku: `sku-${i % 10}`,
    used: false,
    quantity: metered ? 10 + (i % 1000) : null,
    remaining: metered ? i % 1000 : null,
    // Without these the projection read the rights as ended (an expiry of NaN) and held none.
    graceEnds: null,
    clockId: null,
    removed: false,
  }));
}

/**
 * A caller of `gatewayUrl` for benchmarks: JSON in and out, anything but 2xx thrown (a benchmark
 * that counts refusals as work measures nothing).
 */
export function gatewayCaller(gatewayUrl) {
  return async (method, route, authorization, body, headers = {}) => {
    const response = await fetch(`${gatewayUrl}${route}`, {
      method,
      headers: { authorization, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (response.status >= 300) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
    return response.status === 204 ? null : response.json();
  };
}

/** Runs `task(i)` for i < count, `atOnce` at a time (and, with `perSecond`, no faster); the wall time in ms. */
export async function pooled(count, atOnce, task, { perSecond } = {}) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: atOnce }, async () => {
      while (next < count) {
        const i = next++;
        // Paced: task i starts no sooner than its place in a steady stream of `perSecond`.
        const wait = perSecond ? started + (i * 1000) / perSecond - performance.now() : 0;
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await task(i);
      }
    }),
  );
  return performance.now() - started;
}

/** Clock ticks a second, as /proc counts CPU time (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

/** CPU seconds of a process so far (user and system), or 0 when it is gone. */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  } catch {
    return 0;
  }
}

/** The processes whose program is named `name`: each PostgreSQL backend names itself `postgres: …`. */
export function pidsOf(name) {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return path.basename(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]).startsWith(name);
      } catch {
        return false;
      }
    });
}

/**
 * The CPU the processes `processes()` names spend (by name: a list of pids each): `cpuNow()`
 * reads it so far, `spent(before, after)` what each name spent between two readings (a process
 * started in between, all of it: FerretDB opens PostgreSQL backends as it goes).
 */
export function cpuMeter(processes) {
  const cpuNow = () =>
    Object.fromEntries(
      Object.entries(processes()).map(([name, pids]) => [name, new Map(pids.map((pid) => [pid, cpuSeconds(pid)]))]),
    );
  const spent = (before, after) =>
    Object.fromEntries(
      Object.entries(after).map(([name, pids]) => [
        name,
        [...pids].reduce((sum, [pid, seconds]) => sum + seconds - (before[name]?.get(pid) ?? 0), 0),
      ]),
    );
  return { cpuNow, spent };
}

/** The processes of `services` of `system`, and the servers' (FerretDB, PostgreSQL, RabbitMQ): for `cpuMeter`. */
export const processesOf = (system, services) => () => ({
  ...Object.fromEntries(services.map((service) => [service, [system.service(service).pid]])),
  ferretdb: pidsOf('ferretdb'),
  postgres: pidsOf('postgres'),
  rabbitmq: pidsOf('beam.smp'),
});

/**
 * A webhook endpoint on this machine that answers 204 at once: its URL, when each webhook-id
 * first arrived (`firstAttempt`), how many attempts arrived in all, and `close`.
 */
export async function startWebhookReceiver() {
  const { default: http } = await import('node:http');
  const firstAttempt = new Map();
  const counted = { attempts: 0 };
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      counted.attempts += 1;
      const id = String(req.headers['webhook-id']);
      if (!firstAttempt.has(id)) firstAttempt.set(id, Date.now());
      res.writeHead(204).end();
    });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${receiver.address().port}/hook`,
    firstAttempt,
    attempts: () => counted.attempts,
    close: () => receiver.close(),
  };
}

/** Registers `url` as an endpoint of the grantor `authorization` names, for `events`. */
export async function registerEndpoint(system, authorization, url, events) {
  const registered = await fetch(`${system.gatewayUrl}/webhooks/endpoints`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ url, events }),
  });
  if (registered.status !== 201) throw new Error(`register: ${registered.status} ${await registered.text()}`);
}

/**
 * Why deliveries were late, by the webhooks service's own counters: put off (lane or memory
 * full), found again only by the second look at a second already swept, claims lost; and
 * how long an attempt took on average.
 */
export async function dispatcherCounters(system) {
  const metrics = await (await fetch(system.service('webhooks').metricsUrl)).text();
  const count = (name) => {
    const value = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1];
    if (value === undefined) throw new Error(`the webhooks service reports no ${name}`);
    return Number(value);
  };
  // An attempt's time, from its request's start to the end of the answer: the endpoint's own,
  // and the time the dispatcher's process took to get to its answer (docs/performance.md).
  const total = (name) =>
    [...metrics.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce(
      (sum, [, value]) => sum + Number(value),
      0,
    );
  const attemptMs =
    (1000 * total('webhook_attempt_duration_seconds_sum')) / total('webhook_attempt_duration_seconds_count');
  return `put off: ${count('webhook_put_offs_total')}; found late by the second look: ${count('webhook_deliveries_found_late_total')}; claims lost: ${count('webhook_claims_lost_total')}; mean attempt ${attemptMs.toFixed(1)} ms`;
}

/** The `p`th percentile of sorted numbers (nearest rank). */
export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
