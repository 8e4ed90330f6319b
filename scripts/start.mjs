// `npm start` (DESIGN.md 6): the whole system on this machine. All five services run as
// supervised child processes with one merged, readable log, against MONGODB_URL and
// AMQP_URL; when those are not set and nothing answers locally, the local servers that
// deploy/local/setup.sh installed are started first.
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { prettyFactory } from 'pino-pretty';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SERVICES = ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks', 'gateway'];
const START_GRACE_MS = 15_000;
const color = process.stdout.isTTY ? (code, text) => `\x1b[${code}m${text}\x1b[0m` : (_code, text) => text;
const SERVICE_COLORS = {
  catalog: 36,
  rights: 32,
  subscriptions: 35,
  scheduler: 34,
  webhooks: 31,
  gateway: 33,
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

function launch(service, attempt = 0) {
  const child = spawn(
    process.execPath,
    [
      '--require',
      path.join(root, 'libs/telemetry/dist/register.js'),
      path.join(root, 'services', service, 'dist/main.js'),
    ],
    { env: childEnv(service), stdio: ['ignore', 'pipe', 'pipe'] },
  );
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
  const env = {
    NODE_ENV: 'development',
    ADMIN_CLIENT_ID: 'admin',
    ADMIN_CLIENT_SECRET: 'admin-secret-change-me',
    ...process.env,
    OTEL_SERVICE_NAME: service,
  };
  // Without a collector, keep trace context flowing but export nothing.
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) env.OTEL_TRACES_EXPORTER ??= 'none';
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

await ensureServers();
const port = process.env.GATEWAY_PORT ?? '8080';
const admin = process.env.ADMIN_CLIENT_ID ?? 'admin';
say(`starting ${SERVICES.join(', ')}; the gateway will listen on http://localhost:${port}`);
if (!process.env.ADMIN_CLIENT_ID)
  say(`admin client: ${admin} / admin-secret-change-me (set ADMIN_CLIENT_ID and ADMIN_CLIENT_SECRET to change)`);
for (const service of SERVICES) launch(service);
