import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import mongoose from 'mongoose';
import { InProcessService } from './in-process';
import type { TestService } from './test-service';
import { freePort, ServiceProcess } from './processes';
import { RabbitAdmin } from './rabbit-admin';
import { runningSystems } from './running-systems';
import { REPO_ROOT } from './servers';
import { databasesNamed, dropDatabases, testName } from './test-databases';

export type BackendName = 'catalog' | 'rights' | 'subscriptions' | 'scheduler' | 'webhooks';

export interface TestSystemOptions {
  /** Short name of the test file; prefixes its vhost and databases. */
  name: string;
  backends: BackendName[];
  gateway?: boolean;
  /** Export traces to this OTLP/HTTP JSON endpoint (see OtlpReceiver). */
  otlpEndpoint?: string;
  env?: Record<string, string>;
  /**
   * Extra replicas of a backend or the gateway, named `<name>#2`, `#3`…, sharing its database and
   * vhost. Gateway replica `#n` forwards to a backend's replica `#n` where there is one (two
   * gateways and two rights replicas: two independent paths to one database), else to its first.
   */
  replicas?: Partial<Record<BackendName | 'gateway', number>>;
  /**
   * Run each service as its own process, as `npm start` and the images do: for the tests of
   * process faults (kills, replicas, exported traces; `*.e2e.spec.ts`). Without it every
   * service starts in the test's process (`*.int.spec.ts`).
   */
  processes?: boolean;
  /** Another broker than the suite's (a cluster: `amqpUrl` lists its nodes, separated by commas). */
  broker?: { amqpUrl: string; managementUrl: string };
}

export const TEST_ADMIN = { clientId: 'test-admin', secret: 'test-admin-secret-0123' } as const;
export const TEST_INTERNAL_SECRET = 'test-internal-token-secret-0123456789abcdef';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with vitest (its globalSetup provides the servers)`);
  return value;
}

/** The answers `TestSystem.json` sends again: the gateway or a service could not answer now. */
const SENT_AGAIN = new Set([502, 503, 504]);

/**
 * The platform, in the test's process or as separate processes, against the real servers,
 * isolated from other test files by its own RabbitMQ vhost and its own databases
 * (docs/architecture.md), so files run in parallel.
 */
export class TestSystem {
  /** Every running service by label (`rights`, `rights#2`…), in this process or its own. */
  readonly services = new Map<string, TestService>();
  readonly rabbit: RabbitAdmin;
  readonly prefix: string;
  readonly vhost: string;
  readonly amqpUrl: string;

  private constructor(private readonly options: TestSystemOptions) {
    if (!options.processes && (options.otlpEndpoint || Object.keys(options.replicas ?? {}).length > 0))
      throw new Error('replicas and exported traces need a test system with processes');
    this.prefix = testName(options.name);
    this.vhost = this.prefix;
    this.rabbit = new RabbitAdmin(options.broker?.managementUrl ?? required('RABBITMQ_MANAGEMENT_URL'));
    this.amqpUrl = (options.broker?.amqpUrl ?? required('AMQP_URL'))
      .split(',')
      .map((node) => {
        const base = new URL(node);
        base.pathname = `/${encodeURIComponent(this.vhost)}`;
        return base.toString();
      })
      .join(',');
  }

  static async start(options: TestSystemOptions): Promise<TestSystem> {
    const system = new TestSystem(options);
    await system.rabbit.createVhost(system.vhost);
    try {
      await system.launch();
    } catch (error) {
      await system.stop();
      throw error;
    }
    runningSystems.add(system);
    return system;
  }

  /**
   * What each service logged since `since` (ms since the epoch), at `info` and above, the last
   * `perService` lines of each: the story of a test that failed, beside its assertion.
   * @public (read by libs/testing/src/failure-logs.ts, through `runningSystems`)
   */
  logsSince(since: number, perService = 40): string {
    const told = [...this.services].flatMap(([label, service]) => {
      const lines = collapsedRuns(service.logs.filter((line) => loggedSince(line, since))).slice(-perService);
      return lines.length === 0 ? [] : [`--- ${label}`, ...lines];
    });
    return told.join('\n');
  }

  /**
   * Runs a service's migration (`services/<service>/dist/migrate.js`, as the Kubernetes Job
   * and `npm run migrate` run it) against this system's database for it, with `env` on top
   * of the system's; resolves to its exit code and its log lines.
   */
  async migrate(service: string, env: Record<string, string> = {}): Promise<{ code: number | null; logs: string[] }> {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'services', service, 'dist/migrate.js')], {
      env: {
        PATH: process.env.PATH ?? '',
        TZ: 'UTC',
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        AMQP_URL: this.amqpUrl,
        ...this.options.env,
        [`${service.toUpperCase()}_MONGODB_URL`]: this.mongoUrlFor(service),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    const collect = (chunk: Buffer) => output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    const [code] = (await once(child, 'exit')) as [number | null];
    return { code, logs: output };
  }

  mongoUrlFor(service: string): string {
    const url = new URL(required('MONGODB_URL'));
    url.pathname = `/${this.prefix}_${service}`;
    return url.toString();
  }

  /** How many documents of `collection` in `service`'s database hold events not yet published. */
  async pendingEvents(service: string, collection: string): Promise<number> {
    const db = mongoose.createConnection(this.mongoUrlFor(service));
    try {
      await db.asPromise();
      return await db.collection(collection).countDocuments({ 'outbox.0.id': { $exists: true } });
    } finally {
      await db.close();
    }
  }

  /**
   * Changes one stored document of `service`'s database, as a faulty migration or a hand edit
   * would, polling until a document matches `filter` (`set` may compute the fields from it). A
   * document whose events are pending is not one to tamper with: the relay's clean-up is a
   * read-modify-write on FerretDB and would undo the change; filter on `outboxPending: false`.
   */
  async tamper(
    service: string,
    collection: string,
    filter: object,
    set: object | ((stored: Record<string, unknown>) => object),
  ): Promise<void> {
    const db = mongoose.createConnection(this.mongoUrlFor(service));
    try {
      await db.asPromise();
      const changed = async () => {
        const stored = await db.collection(collection).findOne(filter as never);
        if (!stored) return 0;
        const fields = typeof set === 'function' ? set(stored) : set;
        return (await db.collection(collection).updateOne(filter as never, { $set: fields })).modifiedCount;
      };
      // Polled without vitest: this library serves tests but does not import their runner.
      for (const giveUp = Date.now() + 20_000; (await changed()) !== 1;) {
        if (Date.now() > giveUp)
          throw new Error(`no document of ${service}.${collection} matched ${JSON.stringify(filter)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await db.close();
    }
  }

  service(name: string): TestService {
    const found = this.services.get(name);
    if (!found) throw new Error(`${name} is not running in this test system`);
    return found;
  }

  get gatewayUrl(): string {
    return this.service('gateway').url;
  }

  adminHeaders(extra: Record<string, string> = {}): Record<string, string> {
    const token = Buffer.from(`${TEST_ADMIN.clientId}:${TEST_ADMIN.secret}`).toString('base64');
    return { authorization: `Basic ${token}`, ...extra };
  }

  /**
   * Registers through the gateway's admin API, as an operator would: API clients (secret
   * `secret-of-<clientId>`, see `clientAuthorization`), users, and catalog entries.
   */
  async seed(what: {
    clients?: Array<{ clientId: string; grantorId: string; admin?: boolean }>;
    users?: string[];
    skus?: Record<string, object>;
  }): Promise<void> {
    const put = async (path: string, body?: object) => {
      const response = await fetch(`${this.gatewayUrl}${path}`, {
        method: 'PUT',
        headers: this.adminHeaders(body ? { 'content-type': 'application/json' } : {}),
        body: body ? JSON.stringify(body) : undefined,
      });
      if (response.status !== 201 && response.status !== 204)
        throw new Error(`PUT ${path}: ${response.status} ${await response.text()}`);
    };
    for (const { clientId, grantorId, admin } of what.clients ?? []) {
      await put(`/admin/clients/${clientId}`, { secret: `secret-of-${clientId}`, grantorId, admin: admin ?? false });
    }
    for (const user of what.users ?? []) await put(`/id/users/${user}`);
    for (const [sku, body] of Object.entries(what.skus ?? {})) await put(`/catalog/skus/${sku}`, body);
  }

  /** A request through the gateway with these credentials (and headers), a JSON body when one is given. */
  call(
    method: string,
    path: string,
    authorization: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    return fetch(`${this.gatewayUrl}${path}`, {
      method,
      headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  /**
   * A request as a well-behaved client sends it, and the body of its 2xx answer (else an error
   * naming the answer): a 502, 503 or 504 or a dropped connection is sent again after its
   * Retry-After (else a second), up to ten times (on a loaded machine a service's read of another,
   * or the gateway's wait for a service, may time out), a POST under one Idempotency-Key, so
   * nothing is made twice.
   */
  async json<T>(method: string, path: string, authorization: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = method === 'POST' ? { 'idempotency-key': randomUUID() } : {};
    for (let attempt = 1; ; attempt++) {
      const response = await this.call(method, path, authorization, body, headers).catch((error: unknown) => {
        if (attempt < 10) return undefined;
        throw error;
      });
      if (!response || (SENT_AGAIN.has(response.status) && attempt < 10)) {
        await sleep(Number(response?.headers.get('retry-after') ?? 1) * 1000);
        continue;
      }
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    }
  }

  /** The Basic credentials of a client registered by `seed`. */
  static clientAuthorization(clientId: string): string {
    return `Basic ${Buffer.from(`${clientId}:secret-of-${clientId}`).toString('base64')}`;
  }

  private readonly killedConnections = new Set<string>();

  /**
   * Force-closes `service`'s current broker connection as soon as the broker lists it (the
   * management API lists new connections with a delay), as a broker restart or a network
   * cut does; returns how many connections were closed (0 if none appeared in 15 s).
   */
  async killBrokerConnection(service: string): Promise<number> {
    for (let tries = 0; tries < 150; tries++) {
      const fresh = (await this.rabbit.connectionsNamed(this.vhost, service)).filter(
        (name) => !this.killedConnections.has(name),
      );
      for (const name of fresh) {
        this.killedConnections.add(name);
        await this.rabbit.closeConnection(name);
      }
      if (fresh.length > 0) return fresh.length;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return 0;
  }

  async stop(): Promise<void> {
    runningSystems.delete(this);
    await Promise.all([...this.services.values()].map((process) => process.stop()));
    await this.rabbit.deleteVhost(this.vhost).catch(() => undefined);
    // Every database of the system, those only migrated or written by a test included.
    const mongoUrl = required('MONGODB_URL');
    await databasesNamed(mongoUrl, `${this.prefix}_`)
      .then((names) => dropDatabases(mongoUrl, names))
      .catch(() => undefined);
  }

  private serviceOf(label: string, port: number, env: Record<string, string>, service: string): TestService {
    return this.options.processes
      ? new ServiceProcess(label, port, env, service)
      : new InProcessService(label, port, env, service);
  }

  private async launch(): Promise<void> {
    const ports = new Map<string, number>();
    // Every service gets a port; one not started here is simply unreachable.
    for (const name of ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks', 'gateway'])
      ports.set(name, await freePort());
    const gatewayUrl = `http://127.0.0.1:${ports.get('gateway')}`;
    const urlOf = (name: string) => `http://127.0.0.1:${ports.get(name)}`;
    const telemetry: Record<string, string> = this.options.otlpEndpoint
      ? {
          OTEL_EXPORTER_OTLP_ENDPOINT: this.options.otlpEndpoint,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_BSP_SCHEDULE_DELAY: '100',
        }
      : { OTEL_TRACES_EXPORTER: 'none' };
    const common = {
      NODE_ENV: 'test',
      // Nothing but this machine reaches a test's services.
      BIND_ADDRESS: '127.0.0.1',
      LOG_LEVEL: 'info',
      AMQP_URL: this.amqpUrl,
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      PUBLIC_BASE_URL: gatewayUrl,
      CATALOG_URL: urlOf('catalog'),
      RIGHTS_URL: urlOf('rights'),
      SUBSCRIPTIONS_URL: urlOf('subscriptions'),
      WEBHOOKS_URL: urlOf('webhooks'),
      SCHEDULER_URL: urlOf('scheduler'),
      // Tests renew on periods of seconds (docs/api.md: the floor of SUBSCRIPTION_MIN_PERIOD).
      SUBSCRIPTION_MIN_PERIOD: 'PT1S',
      // Tests deliver webhooks to receivers on this machine (docs/api.md).
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      ...telemetry,
      ...this.options.env,
    };
    // The catalog first (the others ask it about SKUs), the gateway last (it forwards to them).
    const order: Array<BackendName | 'gateway'> = [
      ...[...this.options.backends].sort((a, b) => Number(b === 'catalog') - Number(a === 'catalog')),
      ...((this.options.gateway ?? true) ? (['gateway'] as const) : []),
    ];
    /** What one service's process is told beside what all are: where it listens, its database. */
    const ownEnv = async (name: string, port: number, replica: number): Promise<Record<string, string>> =>
      name === 'gateway'
        ? {
            ...Object.fromEntries(
              this.options.backends.flatMap((backend) => {
                const peer = this.services.get(`${backend}#${replica}`);
                return replica > 1 && peer ? [[`${backend.toUpperCase()}_URL`, peer.url]] : [];
              }),
            ),
            GATEWAY_PORT: String(port),
            METRICS_PORT: String(await freePort()),
            GATEWAY_MONGODB_URL: this.mongoUrlFor('gateway'),
            ADMIN_CLIENT_ID: TEST_ADMIN.clientId,
            ADMIN_CLIENT_SECRET: TEST_ADMIN.secret,
          }
        : { PORT: String(port), [`${name.toUpperCase()}_MONGODB_URL`]: this.mongoUrlFor(name) };
    for (const name of order) {
      for (let replica = 1; replica <= (this.options.replicas?.[name] ?? 1); replica++) {
        const label = replica === 1 ? name : `${name}#${replica}`;
        const port = replica === 1 ? ports.get(name)! : await freePort();
        const service = this.serviceOf(
          label,
          port,
          { ...common, ...(await ownEnv(name, port, replica)), OTEL_SERVICE_NAME: name },
          name,
        );
        this.services.set(label, service);
        await service.start();
        // A gateway in front of the rights service answers entitlement checks once its
        // projection is loaded (its readiness): tests start when it is, as traffic would.
        if (name === 'gateway' && this.options.backends.includes('rights') && !(await service.becameReady(30_000)))
          throw new Error(`${label} did not become ready within 30 s`);
      }
    }
  }
}

/**
 * A run of lines with the same message as its first line and how many followed: forty of one
 * warning (a batch of renewals, say) would push out of the last lines what came before it.
 */
function collapsedRuns(lines: readonly string[]): string[] {
  const told: string[] = [];
  let runOf: string | undefined;
  let more = 0;
  const endRun = () => {
    if (more > 0) told.push(`  (and ${more} more with the message ${JSON.stringify(runOf)})`);
    more = 0;
  };
  for (const line of lines) {
    const message = messageOf(line);
    if (message !== undefined && message === runOf) {
      more += 1;
      continue;
    }
    endRun();
    runOf = message;
    told.push(line);
  }
  endRun();
  return told;
}

function messageOf(line: string): string | undefined {
  try {
    return (JSON.parse(line) as { msg?: string }).msg;
  } catch {
    return undefined;
  }
}

/**
 * Whether a service's log line was written at `info` or above since `since`; a line that is not
 * a record (a crash's output) is kept.
 */
function loggedSince(line: string, since: number): boolean {
  try {
    const record = JSON.parse(line) as { level?: string; time?: string };
    return record.level !== 'debug' && record.level !== 'trace' && Date.parse(record.time ?? '') >= since;
  } catch {
    return true;
  }
}
