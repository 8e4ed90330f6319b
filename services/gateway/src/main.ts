import path from 'node:path';
import { DEFAULT_PORTS, env, internalTokenSecret, loadConfig } from '@rs/config';
import { createHttpApp, InternalTokenSigner, runService, startHttpServer } from '@rs/http';
import { createLogger } from '@rs/logging';
import { shutdownTelemetry } from '@rs/telemetry';
import { z } from 'zod';
import { Forwarder } from './http/forward';
import { gatewayRoutes } from './http/routes';

const serviceUrl = (name: keyof typeof DEFAULT_PORTS) => env.httpUrl.default(`http://127.0.0.1:${DEFAULT_PORTS[name]}`);

const Config = z
  .object({
    NODE_ENV: env.nodeEnv,
    LOG_LEVEL: env.logLevel,
    GATEWAY_PORT: env.port.default(DEFAULT_PORTS.gateway),
    PUBLIC_BASE_URL: env.httpUrl.optional(),
    AUTH_REALM: env.realm,
    ADMIN_CLIENT_ID: z
      .string()
      .min(1)
      .regex(/^[^:]+$/, 'must not contain ":"')
      .optional(),
    ADMIN_CLIENT_SECRET: z.string().min(12, 'must be at least 12 characters').optional(),
    INTERNAL_TOKEN_SECRET: env.secret.optional(),
    CATALOG_URL: serviceUrl('catalog'),
    RIGHTS_URL: serviceUrl('rights'),
    SUBSCRIPTIONS_URL: serviceUrl('subscriptions'),
    UPSTREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    OPENAPI_PATH: z.string().default(path.resolve(__dirname, '../../../docs/openapi.json')),
  })
  .refine((cfg) => (cfg.ADMIN_CLIENT_ID === undefined) === (cfg.ADMIN_CLIENT_SECRET === undefined), {
    message: 'ADMIN_CLIENT_ID and ADMIN_CLIENT_SECRET are set together',
    path: ['ADMIN_CLIENT_SECRET'],
  });

const logger = createLogger('gateway');

runService(
  logger,
  async () => {
    const config = loadConfig(Config);
    logger.level = config.LOG_LEVEL;
    const forwarder = new Forwarder({ timeoutMs: config.UPSTREAM_TIMEOUT_MS });
    const app = createHttpApp({
      service: 'gateway',
      logger,
      readiness: {},
      routes: (app) =>
        app.use(
          gatewayRoutes({
            realm: config.AUTH_REALM,
            admin:
              config.ADMIN_CLIENT_ID && config.ADMIN_CLIENT_SECRET
                ? { clientId: config.ADMIN_CLIENT_ID, secret: config.ADMIN_CLIENT_SECRET }
                : null,
            upstreams: {
              catalog: new URL(config.CATALOG_URL),
              rights: new URL(config.RIGHTS_URL),
              subscriptions: new URL(config.SUBSCRIPTIONS_URL),
            },
            forwarder,
            signer: new InternalTokenSigner(internalTokenSecret(config), 'gateway'),
            openApiPath: config.OPENAPI_PATH,
          }),
        ),
    });
    const server = await startHttpServer(app, config.GATEWAY_PORT);
    logger.info(
      { port: server.port, public_base_url: config.PUBLIC_BASE_URL ?? `http://localhost:${server.port}` },
      'listening',
    );
    if (!config.ADMIN_CLIENT_ID) logger.warn('ADMIN_CLIENT_ID is not set: no client can call the API');
    return {
      async stop() {
        await server.close();
        forwarder.close();
      },
    };
  },
  { finally: [shutdownTelemetry] },
);
