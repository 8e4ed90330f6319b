import { internalTokenSecret, loadConfig, mongoTarget, redactUrl, type ServiceName } from '@rs/config';
import {
  createHttpApp,
  InternalTokenSigner,
  requireInternalToken,
  runService,
  startHttpServer,
  type HttpAppOptions,
  type RunningServer,
  type Stoppable,
} from '@rs/http';
import { createLogger, type Logger } from '@rs/logging';
import { AmqpClient } from '@rs/messaging';
import { shutdownTelemetry } from '@rs/telemetry';
import mongoose, { type Connection } from 'mongoose';
import type { z } from 'zod';

/** What every service process holds: its config, logger, database, broker, and internal-token signer. */
export interface Runtime<C> {
  service: ServiceName;
  config: C;
  logger: Logger;
  db: Connection;
  broker: AmqpClient;
  internalSecret: string;
  signer: InternalTokenSigner;
}

interface BaseConfig {
  NODE_ENV: string;
  LOG_LEVEL: string;
  MONGODB_URL: string;
  AMQP_URL: string;
  INTERNAL_TOKEN_SECRET?: string | undefined;
}

const STARTUP_TIMEOUT_MS = Number(process.env.RS_STARTUP_TIMEOUT_MS ?? 20_000);

/** Connects to the service's own database (DESIGN.md 6) and fails with a clear message when it cannot. */
export async function connectDatabase(
  service: ServiceName,
  config: Record<string, unknown>,
  logger: Logger,
): Promise<Connection> {
  const target = mongoTarget(service, config);
  const db = mongoose.createConnection(target.url, {
    dbName: target.dbName,
    serverSelectionTimeoutMS: STARTUP_TIMEOUT_MS,
    autoIndex: false,
    autoCreate: true,
  });
  db.on('disconnected', () => logger.warn('MongoDB disconnected'));
  db.on('reconnected', () => logger.info('MongoDB reconnected'));
  try {
    await db.asPromise();
  } catch (error) {
    throw new Error(`cannot reach MongoDB at ${redactUrl(target.url)}: ${(error as Error).message}`, { cause: error });
  }
  logger.info({ database: target.dbName }, 'connected to MongoDB');
  return db;
}

/**
 * Runs one service process: parses its configuration, connects to MongoDB and RabbitMQ
 * (a clear error and exit code 1 when either is unreachable), lets `start` build the
 * service, and stops everything in reverse order on SIGTERM.
 */
export function runBackend<S extends z.ZodType<BaseConfig>>(
  service: ServiceName,
  schema: S,
  start: (runtime: Runtime<z.infer<S>>) => Promise<Stoppable>,
): void {
  const logger = createLogger(service, process.env.LOG_LEVEL ?? 'info');
  runService(
    logger,
    async () => {
      const config = loadConfig(schema);
      logger.level = config.LOG_LEVEL;
      const internalSecret = internalTokenSecret(config);
      const broker = new AmqpClient({ url: config.AMQP_URL, connectionName: service, logger });
      broker.start();
      let db: Connection | undefined;
      try {
        db = await connectDatabase(service, config as unknown as Record<string, unknown>, logger);
        await broker.waitUntilConnected(STARTUP_TIMEOUT_MS);
        const stoppable = await start({
          service,
          config,
          logger,
          db,
          broker,
          internalSecret,
          signer: new InternalTokenSigner(internalSecret, service),
        });
        const openDb = db;
        return {
          async stop() {
            await stoppable.stop();
            await broker.close();
            await openDb.close();
          },
        };
      } catch (error) {
        await broker.close();
        await db?.close().catch(() => undefined);
        throw error;
      }
    },
    { finally: [shutdownTelemetry] },
  );
}

/** The HTTP side of an internal service: internal token required, readiness from MongoDB and RabbitMQ. */
export async function serveInternalHttp(
  runtime: Runtime<unknown>,
  port: number,
  options: Pick<HttpAppOptions, 'routes' | 'jsonLimit' | 'realm'> & {
    /** Called after every request that may have changed something (not GET), e.g. to publish its events now. */
    afterChange?: () => void;
  },
): Promise<RunningServer> {
  const { afterChange, routes } = options;
  const app = createHttpApp({
    service: runtime.service,
    logger: runtime.logger,
    readiness: {
      mongodb: () => runtime.db.readyState === 1,
      rabbitmq: () => runtime.broker.connected,
    },
    guard: requireInternalToken(runtime.internalSecret),
    jsonLimit: options.jsonLimit,
    realm: options.realm,
    routes: (app) => {
      if (afterChange) {
        app.use((req, res, next) => {
          if (req.method !== 'GET') res.on('finish', afterChange);
          next();
        });
      }
      routes(app);
    },
  });
  const server = await startHttpServer(app, port);
  runtime.logger.info({ port: server.port }, 'listening');
  return server;
}

/**
 * Indexes and other schema changes are a migration step: `node services/<service>/dist/migrate.js`
 * (`npm run migrate`; the Kubernetes init containers). Outside production, or with
 * MIGRATE_ON_START=true, a service also applies them when it starts.
 */
export function migrateOnStart(nodeEnv: string): boolean {
  return nodeEnv !== 'production' || process.env.MIGRATE_ON_START === 'true';
}

/** Runs one service's migration against its own database, then exits (0 on success). */
export function runMigration(
  service: ServiceName,
  schema: z.ZodType,
  migrate: (db: Connection, logger: Logger) => Promise<void>,
): void {
  const logger = createLogger(`${service}-migrate`, process.env.LOG_LEVEL ?? 'info');
  runService(logger, async () => {
    const config = loadConfig(schema) as Record<string, unknown>;
    const db = await connectDatabase(service, config, logger);
    try {
      await migrate(db, logger);
      logger.info('migrated');
    } finally {
      await db.close();
    }
    process.exit(0);
  });
}
