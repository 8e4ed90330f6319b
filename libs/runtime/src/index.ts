import {
  internalTokenSecrets,
  listenEnvShape,
  loadConfig,
  mongoTarget,
  redactUrl,
  type SecretRing,
  type ServiceName,
} from '@rs/config';
import {
  createHttpApp,
  metricsApp,
  InternalTokenSigner,
  requireInternalToken,
  runService,
  startHttpServer,
  type HttpAppOptions,
  type RunningServer,
  type Stoppable,
} from '@rs/http';
import { createLogger, type LogDestination, type Logger } from '@rs/logging';
import { AmqpClient } from '@rs/messaging';
import { OutboxRelay } from '@rs/outbox-relay';
import {
  declareIndexes,
  declaredIndexes,
  purgeExpired,
  serverLimits,
  type CollectionIndexes,
  type HistoryLog,
  type RetainedCollection,
} from '@rs/store';
import { shutdownTelemetry } from '@rs/telemetry';
import { systemClock, type Clock } from '@rs/time';
import mongoose, { type Connection } from 'mongoose';
import { z } from 'zod';

/** What every service holds: its config, logger, database, broker, internal-token signer and clock. */
export interface Runtime<C> {
  service: ServiceName;
  config: C;
  logger: Logger;
  db: Connection;
  broker: AmqpClient;
  /** Whether the service is ready only while connected to the broker (`ServiceOptions.broker`). */
  brokerRequired: boolean;
  /** The internal-token secret, and the previous one while it is rotated out (docs/operations.md). */
  internalSecrets: SecretRing;
  signer: InternalTokenSigner;
  clock: Clock;
  /** BIND_ADDRESS: where its servers listen. */
  bindAddress: string;
  /** Applies a store's migration (indexes) at start, outside production or with MIGRATE_ON_START=true. */
  migrated<S extends { ensureIndexes(): Promise<void> }>(store: S): Promise<S>;
  /** Registers how to stop something the service started; stopped after its server, in reverse order. */
  onStop(stop: () => unknown): void;
}

interface BaseConfig {
  NODE_ENV: string;
  LOG_LEVEL: string;
  MONGODB_URL: string;
  AMQP_URL?: string;
  INTERNAL_TOKEN_SECRET?: string | undefined;
  INTERNAL_TOKEN_SECRET_PREVIOUS?: string | undefined;
}

/** RS_STARTUP_TIMEOUT_MS: how long a service waits for its database and broker at start (read when it starts). */
const startupTimeoutMs = () => Number(process.env.RS_STARTUP_TIMEOUT_MS ?? 20_000);

/** Connects to the service's own database (docs/operations.md) and fails with a clear message when it cannot. */
export async function connectDatabase(
  service: ServiceName,
  config: Record<string, unknown>,
  logger: Logger,
): Promise<Connection> {
  const target = mongoTarget(service, config);
  const db = mongoose.createConnection(target.url, {
    dbName: target.dbName,
    serverSelectionTimeoutMS: startupTimeoutMs(),
    autoIndex: false,
    autoCreate: true,
    // docs/operations.md: an acknowledged change is on a majority of the replica set, so a primary
    // lost right after it does not take it along (stated here, not left to the server's default).
    writeConcern: { w: 'majority' },
  });
  // A disconnection is news unless this process is closing the connection itself.
  let closing = false;
  db.on('disconnecting', () => (closing = true));
  db.on('disconnected', () => (closing ? logger.debug('MongoDB disconnected') : logger.warn('MongoDB disconnected')));
  db.on('reconnected', () => logger.info('MongoDB reconnected'));
  try {
    await db.asPromise();
  } catch (error) {
    throw new Error(`cannot reach MongoDB at ${redactUrl(target.url)}: ${(error as Error).message}`, { cause: error });
  }
  logger.info({ database: target.dbName }, 'connected to MongoDB');
  return db;
}

/** A service started in this process: where it listens, and how to stop it (in reverse order of start). */
export interface RunningService extends Stoppable {
  port: number;
}

/** What `startService` needs to know of a service beyond its name and configuration. */
export interface ServiceOptions {
  /**
   * How the service needs RabbitMQ: `required` (every backend: it waits for the broker at
   * start and is not ready without it), `optional` (the gateway: it connects in the background
   * and serves without it, docs/decisions/0034). Default `required`.
   */
  broker?: 'required' | 'optional';
  /** The clock of every use case, consumer and loop of the service (tests pin it). */
  clock?: Clock;
  /** Where its log lines go; stdout by default (a test running it in-process keeps them). */
  logTo?: LogDestination;
}

/**
 * Starts one service in this process, the same way for every service: parses its
 * configuration from `env`, connects to its own database and to RabbitMQ (a clear error when
 * either is unreachable), and lets `build` wire the service, ending with its HTTP server.
 * Whatever `build` registers with `runtime.onStop` is stopped after the server closes, all at
 * once, then the broker and the database. `main.ts` runs it as a process (`runMain`);
 * tests can start it in-process.
 */
export async function startService<S extends z.ZodType<BaseConfig>>(
  service: ServiceName,
  schema: S,
  env: NodeJS.ProcessEnv,
  build: (runtime: Runtime<z.infer<S>>) => Promise<RunningServer>,
  options: ServiceOptions = {},
): Promise<RunningService> {
  const logger = createLogger(service, env.LOG_LEVEL ?? 'info', options.logTo);
  const config = loadConfig(schema, env);
  const { BIND_ADDRESS: bindAddress } = loadConfig(z.object(listenEnvShape), env);
  logger.level = config.LOG_LEVEL;
  const internalSecrets = internalTokenSecrets(config);
  const stops: Array<() => unknown> = [];
  const broker = new AmqpClient({ url: config.AMQP_URL!, connectionName: service, logger });
  broker.start();
  let db: Connection | undefined;
  let closeServer: (() => Promise<void>) | undefined;
  // The server first (no new request; those in flight finish), then everything else at once:
  // each waits for its own work under way, and a slow database should not add their waits up.
  const close = async () => {
    await closeServer?.();
    await Promise.all(stops.map(async (stop) => stop()));
    await broker.close();
    await db?.close().catch(() => undefined);
  };
  try {
    db = await connectDatabase(service, config as unknown as Record<string, unknown>, logger);
    if (options.broker !== 'optional') await broker.waitUntilConnected(startupTimeoutMs());
    const server = await build({
      service,
      config,
      logger,
      db,
      broker,
      brokerRequired: options.broker !== 'optional',
      internalSecrets,
      signer: new InternalTokenSigner(internalSecrets.current, service),
      clock: options.clock ?? systemClock,
      bindAddress,
      migrated: async (store) => {
        if (migrateOnStart(config.NODE_ENV, env)) await store.ensureIndexes();
        return store;
      },
      onStop: (stop) => stops.push(stop),
    });
    closeServer = () => server.close();
    return { port: server.port, stop: close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** How a service is started: `start(env, options)`, in its own process (`runMain`) or in a test's. */
export type ServiceStart = (env: NodeJS.ProcessEnv, options?: ServiceOptions) => Promise<RunningService>;

/** A service: its name, configuration, and how it is wired (`build`), as `startService` runs it. */
export function defineService<S extends z.ZodType<BaseConfig>>(
  service: ServiceName,
  schema: S,
  build: (runtime: Runtime<z.infer<S>>) => Promise<RunningServer>,
  defaults: ServiceOptions = {},
): ServiceStart {
  return (env, options) => startService(service, schema, env, build, { ...defaults, ...options });
}

/** Runs a service as this process (its `main.ts`): started by `start`, stopped on SIGTERM. */
export function runMain(service: ServiceName, start: (env: NodeJS.ProcessEnv) => Promise<Stoppable>): void {
  const logger = createLogger(service, process.env.LOG_LEVEL ?? 'info');
  runService(logger, () => start(process.env), { finally: [shutdownTelemetry] });
}

/** The outbox relay of a collection (docs/architecture.md), started now and stopped with the service; `history`: where the changes its events report are recorded. */
export function startRelay(runtime: Runtime<unknown>, collection: string, history?: HistoryLog): OutboxRelay {
  const relay = new OutboxRelay({
    db: runtime.db.db!,
    collection,
    client: runtime.broker,
    logger: runtime.logger,
    ...(history ? { history } : {}),
  });
  relay.start();
  runtime.onStop(() => relay.stop());
  return relay;
}

/**
 * Applies a collection's retention (docs/operations.md) where no TTL index does it (FerretDB), from
 * now until the service stops.
 */
export function startPurge(runtime: Runtime<unknown>, retained: RetainedCollection): void {
  const { collection } = retained;
  const purge = purgeExpired(retained, {
    clock: runtime.clock,
    onPurged: (deleted) => runtime.logger.info({ deleted, collection }, 'purged what the retention no longer keeps'),
    onError: (error) => runtime.logger.warn({ err: error, collection }, 'cannot purge expired documents yet'),
  });
  runtime.onStop(() => purge.stop());
}

/**
 * The HTTP side of a service: health and readiness from its database and broker, metrics,
 * and its routes, behind the internal token unless it is the public edge (the gateway).
 */
export async function serveHttp(
  runtime: Runtime<unknown>,
  port: number,
  options: Pick<HttpAppOptions, 'routes' | 'jsonLimit' | 'realm'> & {
    /** What else must hold for the service to be ready, beside its database (and broker). */
    readiness?: HttpAppOptions['readiness'];
    /** The public edge: no internal token (the gateway authenticates callers itself). */
    public?: boolean;
    /** `/metrics` on this port of its own instead of `port` (the public edge's METRICS_PORT). */
    metricsPort?: number;
  },
): Promise<RunningServer> {
  const { routes } = options;
  const readiness: HttpAppOptions['readiness'] = { mongodb: () => runtime.db.readyState === 1, ...options.readiness };
  if (runtime.brokerRequired) readiness.rabbitmq = () => runtime.broker.connected;
  const app = createHttpApp({
    service: runtime.service,
    logger: runtime.logger,
    readiness,
    ...(options.public ? {} : { guard: requireInternalToken(runtime.internalSecrets, runtime.service) }),
    jsonLimit: options.jsonLimit,
    realm: options.realm,
    metrics: options.metricsPort === undefined,
    routes,
  });
  const server = await startHttpServer(app, port, runtime.bindAddress);
  runtime.logger.info({ address: runtime.bindAddress, port: server.port }, 'listening');
  if (options.metricsPort === undefined) return server;
  const metrics = await startHttpServer(metricsApp(), options.metricsPort, runtime.bindAddress);
  runtime.logger.info({ address: runtime.bindAddress, port: metrics.port }, 'serving /metrics');
  return {
    port: server.port,
    close: async (graceMs) => {
      await Promise.all([server.close(graceMs), metrics.close(graceMs)]);
    },
  };
}

/**
 * Indexes and other schema changes are a migration step: `node services/<service>/dist/migrate.js`
 * (`npm run migrate`; the Kubernetes init containers). Outside production, or with
 * MIGRATE_ON_START=true, a service also applies them when it starts.
 */
export function migrateOnStart(nodeEnv: string, env: NodeJS.ProcessEnv = process.env): boolean {
  return nodeEnv !== 'production' || env.MIGRATE_ON_START === 'true';
}

/** What a service's migration does: declare its collections' indexes, then its other steps. */
export interface Migration<C> {
  /** Every collection's queries and indexes (the service's `store/indexes.ts`), for this configuration. */
  indexes: (config: C) => readonly CollectionIndexes[];
  /** Steps beyond the indexes, each applied once (`applyOnce`). */
  steps?: (db: Connection, logger: Logger, config: C) => Promise<void>;
}

/** Runs one service's migration against its own database, then exits (0 on success). */
export function runMigration<S extends z.ZodType>(
  service: ServiceName,
  schema: S,
  migration: Migration<z.infer<S>>,
): void {
  const logger = createLogger(`${service}-migrate`, process.env.LOG_LEVEL ?? 'info');
  runService(logger, async () => {
    const config = loadConfig(schema);
    const db = await connectDatabase(service, config as Record<string, unknown>, logger);
    try {
      for (const declaration of migration.indexes(config)) await declareIndexes(db.db!, declaration);
      await migration.steps?.(db, logger, config);
      // What the queries of docs/operations.md need, and whether this server got them.
      const { usesDriverIndexes } = await serverLimits(db.db!);
      logger.info({ indexes: declaredIndexes(db.db!), driverIndexesCreated: usesDriverIndexes }, 'migrated');
    } finally {
      await db.close();
    }
    process.exit(0);
  });
}
