// `npm start` (docs/operations.md): the whole system on this machine. All six services run as
// supervised child processes with one merged, readable log, against MONGODB_URL and
// AMQP_URL; when those are not set and nothing answers locally, the local servers that
// deploy/local/setup.sh installed are started first. Outside production, with no identity
// provider configured, a development token issuer runs beside them so that Bearer can be
// tried. Flags:
//   --traces  also start Zipkin's server (installed by the setup) and export every span to
//             it: traces at http://localhost:9411/zipkin/;
//   --ports N the gateway on port N and everything else on the ports after it (a second copy
//             beside the first: `npm start -- --ports 9080`);
//   --plan    print what would run, as JSON, and start nothing.
// The log: each service's start-up says one line when it is ready (its earlier lines are shown
// only if it fails to start); the last line says where everything is.
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
const { DEV_STAFF, devIssuerWanted } = require(path.join(root, 'tools/dev-issuer/dist/policy.js'));
const { DEFAULT_PORTS } = require(path.join(root, 'libs/config/dist/index.js'));
/**
 * Started a tier at a time, each once the one before is ready: the rights and subscriptions
 * services ask the catalog about SKUs, the scheduler rebuilds its schedules from them, and
 * the gateway forwards to all; so none starts by failing to reach another.
 */
const TIERS = [['catalog'], ['rights', 'subscriptions'], ['scheduler', 'webhooks', 'gateway']];
const SERVICES = TIERS.flat();
const START_GRACE_MS = 15_000;
const USAGE = `usage: npm start [-- --traces] [-- --ports N] [-- --plan]
  --traces   also run Zipkin's server and send every span to it: http://localhost:9411/zipkin/
  --ports N  the gateway on port N, the services on N+1 to N+5, the gateway's /metrics on N+6,
             the token issuer on N+10, Zipkin on N+11 (default: 8080, 8081-8085, 9464, 8090, 9411)
  --plan     print what would run, as JSON, and start nothing
`;
let flags;
try {
  ({ values: flags } = parseArgs({
    options: {
      traces: { type: 'boolean' },
      plan: { type: 'boolean' },
      ports: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
  if (flags.ports !== undefined && (!/^[1-9][0-9]{0,4}$/.test(flags.ports) || Number(flags.ports) > 65_524))
    throw new Error(`--ports: a port from 1 to 65524, not ${flags.ports}`);
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
/** Every port this run listens on, by what listens: from `--ports`, else the defaults and their variables. */
const base = flags.ports === undefined ? undefined : Number(flags.ports);
const PORTS = {
  gateway: base ?? Number(process.env.GATEWAY_PORT ?? DEFAULT_PORTS.gateway),
  ...Object.fromEntries(
    ['subscriptions', 'rights', 'catalog', 'scheduler', 'webhooks'].map((service) => [
      service,
      base === undefined ? DEFAULT_PORTS[service] : base + DEFAULT_PORTS[service] - DEFAULT_PORTS.gateway,
    ]),
  ),
  metrics: base === undefined ? Number(process.env.METRICS_PORT ?? 9464) : base + 6,
  issuer: base === undefined ? Number(process.env.DEV_ISSUER_PORT ?? 8090) : base + 10,
  zipkin: base === undefined ? Number(process.env.ZIPKIN_PORT ?? 9411) : base + 11,
};
const ISSUER_PORT = PORTS.issuer;
const ZIPKIN_PORT = PORTS.zipkin;
const gatewayUrl = `http://localhost:${PORTS.gateway}`;
/** Installed by deploy/local/setup.sh from Maven Central. */
const ZIPKIN_JAR = path.join(root, '.local/tools/zipkin.jar');
const plan = {
  services: SERVICES,
  nodeEnv: baseEnv.NODE_ENV,
  /** The admin client `npm start` makes up when none is configured (never in production). */
  defaultAdminClient: defaultAdmin ? 'admin' : null,
  devIssuer: devIssuerWanted(baseEnv) ? { url: `http://localhost:${ISSUER_PORT}` } : null,
  zipkin: flags.traces ? { url: `http://localhost:${ZIPKIN_PORT}/zipkin/` } : null,
  gateway: gatewayUrl,
  ports: PORTS,
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
// `POST /path 401 3ms client=acme: the reason` and the whole trace id, to find the trace in
// Zipkin or Jaeger.
const pretty = prettyFactory({
  colorize: Boolean(process.stdout.isTTY),
  translateTime: 'SYS:HH:MM:ss.l',
  singleLine: true,
  ignore: 'pid,hostname,service,span_id,request_id,trace_id,method,path,status,duration_ms,client,reason',
  messageFormat: (log, messageKey) => {
    const text =
      log[messageKey] === 'request' && log.method
        ? `${log.method} ${log.path} ${log.status} ${Math.round(log.duration_ms)}ms` +
          (log.client ? ` client=${log.client}` : '') +
          (log.reason ? `: ${log.reason}` : '')
        : log[messageKey];
    return log.trace_id ? `${text} trace=${log.trace_id}` : text;
  },
});

function format(service, line) {
  const prefix = color(SERVICE_COLORS[service], service.padEnd(13));
  if (!line.startsWith('{')) return `${prefix} ${line}`;
  return `${prefix} ${pretty(line).trimEnd()}`;
}

const children = new Map();
/** Children whose output may still be coming: the last lines say how each stopped. */
const closing = new Set();
let stopping = false;
/**
 * The lines of each child still starting, held back: once it is ready they give way to one
 * line saying so; if it stops before, they are shown, for they say why. Warnings and errors,
 * and what is not a JSON log line, are shown at once.
 */
const startup = new Map();

function shownAtOnce(line) {
  if (!line.startsWith('{')) return true;
  try {
    return JSON.parse(line).level >= 40;
  } catch {
    return true;
  }
}

/** A child answered at its readiness URL: one line, instead of what it said while starting. */
function announceReady(name, where) {
  startup.delete(name);
  process.stdout.write(`${color(SERVICE_COLORS[name], name.padEnd(13))} ready${where ? ` on ${where}` : ''}\n`);
}

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
  // Closed once it has exited and its last lines have been read (see `stop`).
  const closed = new Promise((resolve) => child.once('close', resolve));
  closing.add(closed);
  void closed.then(() => closing.delete(closed));
  // A restart's lines are all shown: something went wrong.
  if (attempt === 0) startup.set(service, []);
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on('line', (line) => {
      const held = startup.get(service);
      if (held && !shownAtOnce(line)) held.push(format(service, line));
      else process.stdout.write(`${format(service, line)}\n`);
    });
  }
  child.on('exit', (code, signal) => {
    children.delete(service);
    for (const line of startup.get(service) ?? []) process.stdout.write(`${line}\n`);
    startup.delete(service);
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

/** Where the services find each other, and the base of every link, on this run's ports. */
const wiring = {
  ...Object.fromEntries(
    SERVICES.filter((service) => service !== 'gateway').map((service) => [
      `${service.toUpperCase()}_URL`,
      `http://127.0.0.1:${PORTS[service]}`,
    ]),
  ),
  PUBLIC_BASE_URL: process.env.PUBLIC_BASE_URL ?? gatewayUrl,
};

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
  const env = { ...baseEnv, ...wiring, OTEL_SERVICE_NAME: service };
  if (service === 'gateway')
    Object.assign(env, { GATEWAY_PORT: String(PORTS.gateway), METRICS_PORT: String(PORTS.metrics) });
  else if (SERVICES.includes(service)) env.PORT = String(PORTS[service]);
  const issuer = { JWT_ISSUER: plan.devIssuer?.url, JWT_AUDIENCE: process.env.JWT_AUDIENCE ?? 'rights-api' };
  if (service === 'issuer')
    return {
      ...env,
      ...issuer,
      DEV_ISSUER_PORT: String(ISSUER_PORT),
      // The console signs in from the gateway's page (docs/console.md).
      CONSOLE_REDIRECT_URIS: `${gatewayUrl}/console,http://127.0.0.1:${PORTS.gateway}/console`,
    };
  // The gateway trusts the development OpenID Provider as it would a real one: its keys, its
  // staff roles and their grantors (docs/identity-providers.md).
  if (service === 'gateway' && plan.devIssuer) env.CONSOLE_ISSUER ??= issuer.JWT_ISSUER;
  if (service === 'gateway' && plan.devIssuer)
    env.AUTH_ISSUERS = JSON.stringify([
      {
        issuer: issuer.JWT_ISSUER,
        audience: issuer.JWT_AUDIENCE,
        jwksUri: `http://127.0.0.1:${ISSUER_PORT}/jwks`,
        claims: { roles: 'roles' },
        // The platform's own provider: any client but an admin (docs/identity-providers.md).
        clients: '*',
        staff: DEV_STAFF,
      },
    ]);
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

/** Stops what runs, a tier at a time in the reverse order of start: none outlives what it calls. */
async function stop(code) {
  if (stopping) return;
  stopping = true;
  const force = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
    // Whatever still holds an output open does not keep this process.
    setTimeout(() => process.exit(code), 2_000).unref();
  }, 15_000);
  for (const tier of [...TIERS].reverse().concat([['issuer', 'zipkin']])) {
    const running = tier.map((name) => children.get(name)).filter((child) => child !== undefined);
    const exits = running.map((child) => new Promise((resolve) => child.once('exit', resolve)));
    for (const child of running) child.kill('SIGTERM');
    await Promise.all(exits);
  }
  await Promise.all([...closing]);
  clearTimeout(force);
  process.exit(code);
}

process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

if (flags.plan) {
  process.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
  process.exit(0);
}
await ensureServers();
const admin = process.env.ADMIN_CLIENT_ID ?? 'admin';
/** Where each child says it is ready: a service's /readyz, the helpers' health checks. */
function readinessOf(name) {
  if (name === 'zipkin') return `http://127.0.0.1:${ZIPKIN_PORT}/health`;
  if (name === 'issuer') return `http://127.0.0.1:${ISSUER_PORT}/healthz`;
  return `http://127.0.0.1:${PORTS[name]}/readyz`;
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
async function startHelper(name, timeoutMs, where) {
  launch(name);
  if (await untilReady(name, timeoutMs)) return announceReady(name, where);
  say(color(31, `${name} did not become ready within ${timeoutMs / 1000} s; stopping`));
  stop(1);
}

/** Whether something on this machine listens on `port` already (what a child would fail on). */
function taken(port) {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(true));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(false)));
  });
}

// A port in use would stop a child with a stack trace: say which, and how to choose others.
const listeners = [
  ...SERVICES.map((service) => [service, PORTS[service]]),
  ["the gateway's /metrics", PORTS.metrics],
  ...(plan.devIssuer ? [['the token issuer', ISSUER_PORT]] : []),
  ...(plan.zipkin ? [['Zipkin', ZIPKIN_PORT]] : []),
];
for (const [name, port] of listeners)
  if (await taken(port)) {
    say(
      color(
        31,
        `port ${port} (${name}) is in use: stop what listens there, or choose other ports: npm start -- --ports 9080`,
      ),
    );
    process.exit(1);
  }

if (plan.zipkin) {
  if (!existsSync(ZIPKIN_JAR)) {
    say(color(31, 'Zipkin is not installed: run `npm run setup` first'));
    process.exit(1);
  }
  await startHelper('zipkin', 120_000, plan.zipkin.url);
}
if (plan.devIssuer && !stopping) await startHelper('issuer', 15_000, `http://127.0.0.1:${ISSUER_PORT}`);
if (!stopping) say(`starting ${SERVICES.join(', ')}`);
for (const tier of TIERS) {
  if (stopping) break;
  for (const service of tier) launch(service);
  for (const service of tier)
    if (await untilReady(service, 60_000)) announceReady(service, service === 'gateway' ? gatewayUrl : undefined);
    else if (children.has(service)) {
      for (const line of startup.get(service) ?? []) process.stdout.write(`${line}\n`);
      startup.delete(service);
      say(color(33, `${service} is not ready after 60 s; starting the rest anyway`));
    }
}
if (!stopping) {
  // Everything a newcomer needs next, in one line.
  const issuerUrl = ISSUER_PORT === 8090 ? '' : `DEV_ISSUER_URL=http://127.0.0.1:${ISSUER_PORT} `;
  say(
    [
      `ready: ${gatewayUrl}`,
      `the API page ${gatewayUrl}/docs`,
      ...(plan.devIssuer ? [`the console ${gatewayUrl}/console`] : []),
      ...(defaultAdmin ? [`admin client ${admin} / admin-secret-change-me`] : []),
      ...(plan.devIssuer
        ? [
            `a user's token: ${issuerUrl}npm run -s token -- --user alice --client acme --scope id.user.right.read`,
            `staff sign in (any password) as acme-agent (write), acme-reader (read) or operator (admin)`,
          ]
        : []),
      ...(plan.zipkin ? [`traces ${plan.zipkin.url}`] : []),
    ].join('; '),
  );
}
