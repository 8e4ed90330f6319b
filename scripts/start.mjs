// `npm start` (docs/operations.md): the whole system on this machine. All six services run as
// supervised child processes with one merged, readable log, against MONGODB_URL and
// AMQP_URL; when those are not set and nothing answers locally, the local servers that
// deploy/local/setup.sh installed are started first. Outside production, with no identity
// provider configured, a development token issuer runs beside them so that Bearer can be
// tried. Flags:
//   --traces  also start Zipkin's server (installed by the setup) and export every span to
//             it: traces at http://localhost:9411/zipkin/;
//   --plan    print what would run, as JSON, and start nothing.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { prettyFactory } from 'pino-pretty';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { devIssuerWanted } = require(path.join(root, 'tools/dev-issuer/dist/policy.js'));
const { DEFAULT_PORTS } = require(path.join(root, 'libs/config/dist/index.js'));
/**
 * Started a tier at a time, each once the one before is ready: the rights and subscriptions
 * services ask the catalog about SKUs, the scheduler rebuilds its schedules from them, and
 * the gateway forwards to all; so none starts by failing to reach another.
 */
const TIERS = [['catalog'], ['rights', 'subscriptions'], ['scheduler', 'webhooks', 'gateway']];
const SERVICES = TIERS.flat();
const START_GRACE_MS = 15_000;
const USAGE = `usage: npm start [-- --traces] [-- --plan]
  --traces  also run Zipkin's server and send every span to it: http://localhost:9411/zipkin/
  --plan    print what would run, as JSON, and start nothing
`;
let flags;
try {
  ({ values: flags } = parseArgs({
    options: { traces: { type: 'boolean' }, plan: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  }));
} catch (error) {
  process.stderr.write(`${error.message}\n${USAGE}`);
  process.exit(2);
}
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

/**
 * The environment every child starts from: development unless the caller says otherwise,
 * with a known admin client only then (in production the operator sets its own, or none).
 */
const nodeEnv = process.env.NODE_ENV ?? 'development';
const defaultAdmin = nodeEnv !== 'production' && !process.env.ADMIN_CLIENT_ID;
const baseEnv = {
  NODE_ENV: nodeEnv,
  // On a laptop nothing but the laptop reaches the services (the gateway's port included).
  BIND_ADDRESS: '127.0.0.1',
  ...(defaultAdmin ? { ADMIN_CLIENT_ID: 'admin', ADMIN_CLIENT_SECRET: 'admin-secret-change-me' } : {}),
  ...process.env,
};
const ISSUER_PORT = Number(process.env.DEV_ISSUER_PORT ?? 8090);
const ZIPKIN_PORT = Number(process.env.ZIPKIN_PORT ?? 9411);
/** Installed by deploy/local/setup.sh from Maven Central. */
const ZIPKIN_JAR = path.join(root, '.local/tools/zipkin.jar');
const plan = {
  services: SERVICES,
  nodeEnv: baseEnv.NODE_ENV,
  /** The admin client `npm start` makes up when none is configured (never in production). */
  defaultAdminClient: defaultAdmin ? 'admin' : null,
  devIssuer: devIssuerWanted(baseEnv) ? { url: `http://localhost:${ISSUER_PORT}` } : null,
  zipkin: flags.traces ? { url: `http://localhost:${ZIPKIN_PORT}/zipkin/` } : null,
};
const color = process.stdout.isTTY ? (code, text) => `\x1b[${code}m${text}\x1b[0m` : (_code, text) => text;
const SERVICE_COLORS = {
  catalog: 36,
  rights: 32,
  subscriptions: 35,
  scheduler: 34,
  webhooks: 31,
  gateway: 33,
  issuer: 90,
  zipkin: 90,
  start: 37,
};

function say(message) {
  process.stdout.write(`${color(SERVICE_COLORS.start, 'start'.padEnd(13))} ${message}\n`);
}

function answers(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

async function ensureServers() {
  if (process.env.MONGODB_URL && process.env.AMQP_URL) return;
  if ((process.env.MONGODB_URL || (await answers(27017))) && (process.env.AMQP_URL || (await answers(5672)))) return;
  say('MongoDB or RabbitMQ is not answering on 127.0.0.1; starting the local servers');
  const result = spawnSync('bash', [path.join(root, 'deploy/local/start-servers.sh')], { stdio: 'inherit' });
  if (result.status !== 0) {
    say(color(31, 'cannot start MongoDB/RabbitMQ: run `npm run setup` first, or set MONGODB_URL and AMQP_URL'));
    process.exit(1);
  }
}

// One JSON log line, readable: pino-pretty, with the request lines shortened to
// `GET /path 200 3ms` and the trace id kept (first 8 characters) to find it in Jaeger.
const pretty = prettyFactory({
  colorize: Boolean(process.stdout.isTTY),
  translateTime: 'SYS:HH:MM:ss.l',
  singleLine: true,
  ignore: 'pid,hostname,service,span_id,request_id,trace_id,method,path,status,duration_ms',
  messageFormat: (log, messageKey) => {
    const text =
      log[messageKey] === 'request' && log.method
        ? `${log.method} ${log.path} ${log.status} ${Math.round(log.duration_ms)}ms`
        : log[messageKey];
    return log.trace_id ? `${text} trace=${String(log.trace_id).slice(0, 8)}` : text;
  },
});

function format(service, line) {
  const prefix = color(SERVICE_COLORS[service], service.padEnd(13));
  if (!line.startsWith('{')) return `${prefix} ${line}`;
  return `${prefix} ${pretty(line).trimEnd()}`;
}

const children = new Map();
let stopping = false;

/** Zipkin (Armeria) listens on every interface by default; traces stay on this machine. */
const zipkinOnLoopback = (port) => [
  '-Darmeria.ports[0].ip=127.0.0.1',
  `-Darmeria.ports[0].port=${port}`,
  '-Darmeria.ports[0].protocols=http',
];

/** How each child runs: a service of services/, or one of the development helpers. */
function commandOf(name) {
  if (name === 'issuer') return [process.execPath, [path.join(root, 'tools/dev-issuer/dist/main.js')]];
  if (name === 'zipkin') return ['java', ['-Xms64m', '-Xmx512m', ...zipkinOnLoopback(ZIPKIN_PORT), '-jar', ZIPKIN_JAR]];
  return [
    process.execPath,
    [
      '--require',
      path.join(root, 'libs/telemetry/dist/register.js'),
      path.join(root, 'services', name, 'dist/main.js'),
    ],
  ];
}

function launch(service, attempt = 0) {
  const [command, args] = commandOf(service);
  const child = spawn(command, args, { env: childEnv(service), stdio: ['ignore', 'pipe', 'pipe'] });
  const startedAt = Date.now();
  children.set(service, child);
  for (const stream of [child.stdout, child.stderr]) {
    readline
      .createInterface({ input: stream })
      .on('line', (line) => process.stdout.write(`${format(service, line)}\n`));
  }
  child.on('exit', (code, signal) => {
    children.delete(service);
    if (stopping) return;
    if (Date.now() - startedAt < START_GRACE_MS && attempt === 0) {
      say(color(31, `${service} exited while starting (${signal ?? `code ${code}`}); stopping everything`));
      stop(1);
      return;
    }
    const delay = Math.min(30_000, 1000 * 2 ** Math.min(attempt, 5));
    say(color(33, `${service} exited (${signal ?? `code ${code}`}); restarting in ${delay / 1000} s`));
    setTimeout(() => !stopping && launch(service, attempt + 1), delay);
  });
}

function childEnv(service) {
  if (service === 'zipkin')
    // In-memory storage: traces of this run only; its (Spring Boot) log without the banner, warnings up.
    return {
      ...process.env,
      STORAGE_TYPE: 'mem',
      QUERY_PORT: String(ZIPKIN_PORT),
      SPRING_MAIN_BANNER_MODE: 'off',
      LOGGING_LEVEL_ROOT: 'WARN',
    };
  const env = { ...baseEnv, OTEL_SERVICE_NAME: service };
  const issuer = { JWT_ISSUER: plan.devIssuer?.url, JWT_AUDIENCE: process.env.JWT_AUDIENCE ?? 'rights-api' };
  if (service === 'issuer') return { ...env, ...issuer, DEV_ISSUER_PORT: String(ISSUER_PORT) };
  // The gateway trusts the development issuer, through its JWKS as it would a real provider's.
  if (service === 'gateway' && plan.devIssuer)
    Object.assign(env, issuer, { JWT_JWKS_URL: `http://127.0.0.1:${ISSUER_PORT}/.well-known/jwks.json` });
  if (plan.zipkin) {
    env.OTEL_TRACES_EXPORTER = 'zipkin';
    env.OTEL_EXPORTER_ZIPKIN_ENDPOINT = `http://127.0.0.1:${ZIPKIN_PORT}/api/v2/spans`;
  } else if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    // Without a collector, keep trace context flowing but export nothing.
    env.OTEL_TRACES_EXPORTER ??= 'none';
  }
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  return env;
}

function stop(code) {
  if (stopping) return;
  stopping = true;
  const exits = [...children.values()].map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of children.values()) child.kill('SIGTERM');
  const force = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, 15_000);
  Promise.all(exits).then(() => {
    clearTimeout(force);
    process.exit(code);
  });
}

process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

if (flags.plan) {
  process.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
  process.exit(0);
}
await ensureServers();
const port = process.env.GATEWAY_PORT ?? '8080';
const admin = process.env.ADMIN_CLIENT_ID ?? 'admin';
/** Where each child says it is ready: a service's /readyz, the helpers' health checks. */
function readinessOf(name) {
  if (name === 'zipkin') return `http://127.0.0.1:${ZIPKIN_PORT}/health`;
  if (name === 'issuer') return `http://127.0.0.1:${ISSUER_PORT}/healthz`;
  if (name === 'gateway') return `http://127.0.0.1:${port}/readyz`;
  const configured = process.env[`${name.toUpperCase()}_URL`];
  return `${configured ?? `http://127.0.0.1:${DEFAULT_PORTS[name]}`}/readyz`;
}

/** Whether `name` answered 200 at its readiness URL within `timeoutMs` (false if it exited). */
async function untilReady(name, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && children.has(name) && !stopping) {
    const response = await fetch(readinessOf(name)).catch(() => undefined);
    if (response?.status === 200) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/** Starts a development helper the services depend on; without it, nothing else starts. */
async function startHelper(name, timeoutMs) {
  launch(name);
  if (await untilReady(name, timeoutMs)) return;
  say(color(31, `${name} did not become ready within ${timeoutMs / 1000} s; stopping`));
  stop(1);
}

if (plan.zipkin) {
  if (!existsSync(ZIPKIN_JAR)) {
    say(color(31, 'Zipkin is not installed: run `npm run setup` first'));
    process.exit(1);
  }
  say(`starting Zipkin for traces (in memory): ${plan.zipkin.url}`);
  await startHelper('zipkin', 120_000);
}
if (plan.devIssuer && !stopping) {
  await startHelper('issuer', 15_000);
  say(
    `Bearer: tokens from the development issuer, e.g. npm run -s token -- --user alice --client acme --scope id.user.right.read`,
  );
}
if (!stopping) {
  say(`starting ${SERVICES.join(', ')}; the gateway will listen on http://localhost:${port}`);
  if (defaultAdmin)
    say(`admin client: ${admin} / admin-secret-change-me (set ADMIN_CLIENT_ID and ADMIN_CLIENT_SECRET to change)`);
}
for (const tier of TIERS) {
  if (stopping) break;
  for (const service of tier) launch(service);
  for (const service of tier)
    if (!(await untilReady(service, 60_000)) && children.has(service))
      say(color(33, `${service} is not ready after 60 s; starting the rest anyway`));
}
if (!stopping) say(`ready: http://localhost:${port}`);
