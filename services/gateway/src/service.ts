import path from 'node:path';
import { DEFAULT_PORTS, env, serviceUrl } from '@rs/config';
import { defineService, serveHttp, startPurge, startRelay } from '@rs/runtime';
import { ClockTimes, servicePrincipal } from '@rs/http';
import { z } from 'zod';
import { Authenticator } from './auth/authenticator';
import { TrustedProxies } from './domain/source-address';
import { BearerVerifier, DEFAULT_CLOCK_TOLERANCE_S } from './auth/bearer';
import { IssuerConfigError, issuersFrom } from './auth/issuers';
import { FailureThrottle } from './auth/failure-throttle';
import { hashSecret, verifySecret } from './auth/secrets';
import { Forwarder } from './http/forward';
import { projectedRightsOf } from './http/projected-rights';
import { Administration } from './app/administration';
import { Forwarding } from './app/forwarding';
import { gatewayRoutes } from './http/routes';
import { ClientStore } from './store/client-store';
import { RevocationStore } from './store/revocation-store';
import { UserStore } from './store/user-store';
import { IdempotencyStore } from './store/idempotency-store';
import { Idempotency } from './app/idempotency';
import { repeat } from '@rs/time';
import { ReplicaRegistry } from '@rs/replicas';
import { Entitlements } from './app/entitlements';
import { AuditLog } from './app/audit';
import { AuditRetention, openLeaseMs } from './domain/audit';
import { AUDIT_EVENTS, AuditStore } from './store/audit-store';
import { AuditedRequests } from './http/audited';
import { consolePage } from './http/console';
import { keepEntitlements, rightsSnapshot } from './messaging/entitlements';

export const Config = z
  .object({
    NODE_ENV: env.nodeEnv,
    LOG_LEVEL: env.logLevel,
    MONGODB_URL: env.mongoUrl.default('mongodb://127.0.0.1:27017'),
    // docs/api.md "Entitlement checks": the projection follows rights.events (docs/decisions/0034).
    AMQP_URL: env.amqpUrl.default('amqp://guest:guest@127.0.0.1:5672'),
    GATEWAY_MONGODB_URL: env.mongoUrl.optional(),
    GATEWAY_PORT: env.port.default(DEFAULT_PORTS.gateway),
    /** `/metrics` on a port of its own, never on the public one (docs/security.md). */
    METRICS_PORT: env.port.default(9464),
    PUBLIC_BASE_URL: env.baseUrl.optional(),
    AUTH_REALM: env.realm,
    ADMIN_CLIENT_ID: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "-" or "_"')
      .optional(),
    ADMIN_CLIENT_SECRET: z.string().min(12, 'must be at least 12 characters').optional(),
    JWT_JWKS_URL: env.httpUrl.optional(),
    JWT_PUBLIC_KEY: z.string().includes('BEGIN PUBLIC KEY', { message: 'must be a PEM public key' }).optional(),
    JWT_ISSUER: z.string().min(1).optional(),
    JWT_AUDIENCE: z.string().min(1).optional(),
    /** The trusted identity providers (docs/identity-providers.md): a JSON array, or a JSON or YAML file of one. */
    AUTH_ISSUERS: z.string().min(1).optional(),
    AUTH_ISSUERS_FILE: z.string().min(1).optional(),
    /** The longest lifetime of an access token accepted, and so of a revocation at least (docs/security.md). */
    JWT_MAX_TOKEN_LIFETIME_S: z.coerce.number().int().min(60).default(86_400),
    INTERNAL_TOKEN_SECRET: env.secret.optional(),
    INTERNAL_TOKEN_SECRET_PREVIOUS: env.secret.optional(),
    CATALOG_URL: serviceUrl('catalog'),
    RIGHTS_URL: serviceUrl('rights'),
    SUBSCRIPTIONS_URL: serviceUrl('subscriptions'),
    WEBHOOKS_URL: serviceUrl('webhooks'),
    SCHEDULER_URL: serviceUrl('scheduler'),
    UPSTREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    /** How long a request body may take to arrive (408 after; docs/security.md). */
    BODY_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    /** docs/operations.md: how long an Idempotency-Key and its response are kept. */
    IDEMPOTENCY_TTL_S: z.coerce.number().int().min(1).default(86_400),
    AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
    RATE_LIMIT_PER_SECOND: z.coerce.number().min(0).default(200),
    RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(400),
    /** Each (client, user) pair of Bearer calls has a budget of its own (docs/security.md). */
    RATE_LIMIT_USER_PER_SECOND: z.coerce.number().min(0).default(20),
    RATE_LIMIT_USER_BURST: z.coerce.number().int().min(1).default(40),
    /** The open routes (JWKS, OpenAPI, /docs), per source address. */
    RATE_LIMIT_OPEN_PER_SECOND: z.coerce.number().min(0).default(20),
    RATE_LIMIT_OPEN_BURST: z.coerce.number().int().min(1).default(60),
    /** docs/api.md: proxies whose X-Forwarded-For names the source address. */
    TRUSTED_PROXIES: z
      .string()
      .optional()
      .transform((spec, ctx) => {
        try {
          return new TrustedProxies(spec);
        } catch (error) {
          ctx.addIssue({
            code: 'custom',
            message: `must be comma-separated addresses or CIDRs: ${(error as Error).message}`,
          });
          return z.NEVER;
        }
      }),
    /** docs/console.md: the identity provider staff sign in at, and the console's client there. */
    CONSOLE_ISSUER: z.string().url().optional(),
    CONSOLE_CLIENT_ID: z.string().min(1).default('rights-console'),
    CONSOLE_DIST: z.string().default(path.resolve(__dirname, '../../../apps/console/dist')),
    /** How long the audit log keeps an entry (docs/audit.md): an ISO 8601 duration. */
    AUDIT_RETENTION: AuditRetention,
    OPENAPI_PATH: z.string().default(path.resolve(__dirname, '../../../docs/openapi.json')),
  })
  .refine((cfg) => (cfg.ADMIN_CLIENT_ID === undefined) === (cfg.ADMIN_CLIENT_SECRET === undefined), {
    message: 'ADMIN_CLIENT_ID and ADMIN_CLIENT_SECRET are set together',
    path: ['ADMIN_CLIENT_SECRET'],
  })
  .refine((cfg) => !(cfg.JWT_JWKS_URL || cfg.JWT_PUBLIC_KEY) || (cfg.JWT_ISSUER && cfg.JWT_AUDIENCE), {
    message: 'JWT_ISSUER and JWT_AUDIENCE are required with JWT_JWKS_URL or JWT_PUBLIC_KEY',
    path: ['JWT_ISSUER'],
  })
  .refine((cfg) => !(cfg.JWT_JWKS_URL && cfg.JWT_PUBLIC_KEY), {
    message: 'set JWT_JWKS_URL or JWT_PUBLIC_KEY, not both',
    path: ['JWT_PUBLIC_KEY'],
  })
  .transform((cfg, ctx) => {
    try {
      return { ...cfg, issuers: issuersFrom(cfg) };
    } catch (error) {
      if (!(error instanceof IssuerConfigError)) throw error;
      ctx.addIssue({ code: 'custom', path: [error.variable], message: error.message });
      return z.NEVER;
    }
  });

/**
 * The gateway (docs/api.md): authenticates callers (Basic and Bearer), decides what the
 * contract lets them do from the route table, answers its own routes (API clients, users)
 * and forwards the rest to the service that owns it.
 */
export const start = defineService(
  'gateway',
  Config,
  async (runtime) => {
    const { config, db, logger, clock } = runtime;
    const bearer =
      config.issuers.length > 0
        ? new BearerVerifier({
            issuers: config.issuers,
            maxLifetimeSeconds: config.JWT_MAX_TOKEN_LIFETIME_S,
            logger,
            clock,
          })
        : null;
    // An issuer that cannot be reached yet does not hold the start: its tokens are 503 meanwhile.
    await bearer?.start();
    runtime.onStop(() => bearer?.stop());
    const clients = new ClientStore(db, clock);
    const users = new UserStore(db, config.AUTH_CACHE_TTL_MS, clock);
    const revocations = await runtime.migrated(
      new RevocationStore(db, {
        logger,
        minimumMs: (config.JWT_MAX_TOKEN_LIFETIME_S + DEFAULT_CLOCK_TOLERANCE_S) * 1000,
        clock,
      }),
    );
    await revocations.start();
    runtime.onStop(() => revocations.stop());
    if (config.ADMIN_CLIENT_ID && config.ADMIN_CLIENT_SECRET) {
      await ensureAdminClient(clients, config.ADMIN_CLIENT_ID, config.ADMIN_CLIENT_SECRET);
    } else {
      logger.warn('ADMIN_CLIENT_ID is not set: no admin client is ensured');
    }
    // docs/api.md "Entitlement checks": answered from memory, fed by events and by the answers
    // of the changes this replica forwards.
    const entitlements = new Entitlements({
      snapshot: rightsSnapshot(config.RIGHTS_URL, runtime.signer),
      users,
      logger,
      clock,
      clocks: new ClockTimes({ schedulerUrl: config.SCHEDULER_URL, signer: runtime.signer, service: 'gateway' }),
    });
    runtime.onStop(await keepEntitlements(entitlements, runtime.broker, logger));
    const forwarder = new Forwarder({
      timeoutMs: config.UPSTREAM_TIMEOUT_MS,
      onAnswer: (headers) => {
        for (const right of projectedRightsOf(headers)) entitlements.applyAnswer(right);
      },
    });
    runtime.onStop(() => forwarder.close());
    const idempotencyKeys = await runtime.migrated(new IdempotencyStore(db, clock));
    const purging = repeat(() => idempotencyKeys.purge(), {
      everyMs: 60_000,
      immediately: false,
      onError: (error) => logger.warn({ err: error }, 'cannot purge expired idempotency keys'),
    });
    runtime.onStop(() => purging.stop());
    const authenticator = new Authenticator({
      clients,
      revocations,
      bearer,
      throttle: new FailureThrottle(undefined, clock),
      realm: config.AUTH_REALM,
      cacheTtlMs: config.AUTH_CACHE_TTL_MS,
      clock,
    });
    // docs/operations.md: a client's rate limit holds across the gateway's replicas, each enforcing its share.
    const replicas = new ReplicaRegistry(db.db!, 'gateway_replicas', clock, (error) =>
      logger.warn({ err: error }, 'cannot renew the gateway replica membership'),
    );
    await replicas.start();
    runtime.onStop(() => replicas.stop());
    const publicBaseUrl = config.PUBLIC_BASE_URL ?? `http://localhost:${config.GATEWAY_PORT}`;
    // docs/audit.md: every change of an admin client or a staff member, published as audit.recorded.
    const auditStore = await runtime.migrated(new AuditStore(db.db!, config.AUDIT_RETENTION));
    startRelay(runtime, AUDIT_EVENTS);
    for (const retained of auditStore.retained) startPurge(runtime, retained);
    const auditLog = new AuditLog({
      store: auditStore,
      publicBaseUrl,
      clock,
      logger,
      leaseMs: openLeaseMs(config.UPSTREAM_TIMEOUT_MS),
    });
    const closing = repeat(() => auditLog.closeAbandoned(), {
      // At least once a minute, and as often as an entry may be left open.
      everyMs: Math.min(60_000, openLeaseMs(config.UPSTREAM_TIMEOUT_MS)),
      immediately: true,
      onError: (error) => logger.warn({ err: error }, 'cannot close the audit entries a stopped gateway left yet'),
    });
    runtime.onStop(() => closing.stop());
    // The entries of the last answered requests are stored before the database closes.
    runtime.onStop(() => auditStore.flush());
    logger.info({ public_base_url: publicBaseUrl, bearer: bearer !== null }, 'gateway configured');
    return serveHttp(runtime, config.GATEWAY_PORT, {
      public: true,
      metricsPort: config.METRICS_PORT,
      readiness: { entitlements: () => entitlements.loaded },
      realm: config.AUTH_REALM,
      routes: (app) =>
        app.use(
          gatewayRoutes({
            realm: config.AUTH_REALM,
            publicBaseUrl,
            authenticator,
            proxies: config.TRUSTED_PROXIES,
            administration: new Administration({ clients, users, revocations, authenticator, clock }),
            forwarding: new Forwarding({ users, publicBaseUrl, gateway: servicePrincipal('gateway') }),
            entitlements,
            auditLog,
            audit: new AuditedRequests(auditLog),
            console: consolePage({
              dist: config.CONSOLE_DIST,
              publicBaseUrl,
              issuer: config.CONSOLE_ISSUER,
              clientId: config.CONSOLE_CLIENT_ID,
            }),
            upstreams: {
              catalog: new URL(config.CATALOG_URL),
              rights: new URL(config.RIGHTS_URL),
              subscriptions: new URL(config.SUBSCRIPTIONS_URL),
              webhooks: new URL(config.WEBHOOKS_URL),
              scheduler: new URL(config.SCHEDULER_URL),
            },
            forwarder,
            bodyTimeoutMs: config.BODY_TIMEOUT_MS,
            signer: runtime.signer,
            rateLimit: {
              client: { perSecond: config.RATE_LIMIT_PER_SECOND, burst: config.RATE_LIMIT_BURST },
              user: { perSecond: config.RATE_LIMIT_USER_PER_SECOND, burst: config.RATE_LIMIT_USER_BURST },
              open: { perSecond: config.RATE_LIMIT_OPEN_PER_SECOND, burst: config.RATE_LIMIT_OPEN_BURST },
              replicas: () => replicas.count,
            },
            openApiPath: config.OPENAPI_PATH,
            clock,
            idempotency: new Idempotency({
              store: idempotencyKeys,
              ttlS: config.IDEMPOTENCY_TTL_S,
              // A first attempt that has not answered by then has crashed or timed out.
              leaseMs: config.UPSTREAM_TIMEOUT_MS + 5_000,
            }),
          }),
        ),
    });
  },
  { broker: 'optional' },
);

/** docs/operations.md: the admin client of the environment exists at start (its grantor is its own id). */
async function ensureAdminClient(clients: ClientStore, clientId: string, secret: string): Promise<void> {
  const existing = await clients.find(clientId);
  const current =
    existing?.admin && existing.grantorId === clientId && (await verifySecret(secret, existing.secretHash));
  if (!current) await clients.put({ clientId, grantorId: clientId, admin: true, secretHash: await hashSecret(secret) });
}
