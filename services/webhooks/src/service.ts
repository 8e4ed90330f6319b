import { env, publicApiShape, secretRing, serviceEnvShape } from '@rs/config';
import { defineService, serveHttp, startPurge } from '@rs/runtime';
import { ReplicaRegistry } from '@rs/replicas';
import { Sealer } from '@rs/sealing';
import { z } from 'zod';
import { Dispatcher } from './app/dispatcher';
import { EndpointUseCases } from './app/endpoints';
import { GrantorEndpoints } from './app/grantor-endpoints';
import { parseRetrySchedule } from './domain/delivery';
import { webhookRoutes } from './http/routes';
import { consumeEventsForWebhooks } from './messaging/events';
import { Sender } from './net/sender';
import { DeliveryStore, DeliverySweepCursor } from './store/delivery-store';
import { EndpointStore } from './store/endpoint-store';

const flag = z
  .enum(['true', 'false'])
  .optional()
  .transform((value) => (value === undefined ? undefined : value === 'true'));

export const Config = z
  .object({
    ...serviceEnvShape('webhooks'),
    ...publicApiShape,
    /** docs/operations.md: delays between delivery attempts. */
    WEBHOOK_RETRY_SCHEDULE: env.parsed(
      '5s,5m,30m,2h,5h,10h,10h',
      (text) => parseRetrySchedule(text) ?? undefined,
      'must be comma-separated durations like 5s,5m,2h',
    ),
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    /** Default: false, but true in development (local receivers on plain http). */
    WEBHOOK_ALLOW_PRIVATE_TARGETS: flag,
    /** Attempts under way at once for one endpoint (isolation: a slow one holds no more). */
    WEBHOOK_CONCURRENCY_PER_ENDPOINT: z.coerce.number().int().min(1).max(64).default(8),
    // docs/operations.md "Webhooks": deliveries waiting in memory for their attempt, in all.
    WEBHOOK_MEMORY_DELIVERIES: z.coerce.number().int().min(100).max(1_000_000).default(10_000),
    /** Encrypts the endpoints' secrets at rest (32+ characters); required outside development. */
    WEBHOOK_SECRET_KEY: env.secret.optional(),
    WEBHOOK_SECRET_KEY_PREVIOUS: env.secret.optional(),
    /** docs/operations.md: endpoints one grantor may register. */
    WEBHOOK_MAX_ENDPOINTS: z.coerce.number().int().min(1).max(10_000).default(50),
    /** docs/operations.md (docs/decisions/0032): days a delivery is kept after it was created. */
    WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  })
  .superRefine((config, context) => {
    // A delivery still being retried is never purged: the retention outlasts its attempts by a day.
    const attemptsMs = config.WEBHOOK_RETRY_SCHEDULE.reduce((sum, delay) => sum + delay, 0);
    if (config.WEBHOOK_DELIVERY_RETENTION_DAYS * 86_400_000 < attemptsMs + 86_400_000)
      context.addIssue({
        code: 'custom',
        path: ['WEBHOOK_DELIVERY_RETENTION_DAYS'],
        message: 'must outlast WEBHOOK_RETRY_SCHEDULE by at least a day',
      });
  });

/** What the endpoints' secrets are sealed for (separates their key from other uses of the secret). */
export const ENDPOINT_SECRETS_PURPOSE = 'rs-webhook-endpoint-secrets';

/**
 * The webhooks service (docs/architecture.md): the endpoints API, its own durable queue on the
 * events exchanges, and signed deliveries to endpoints outside the cluster, with retries.
 */
export const start = defineService('webhooks', Config, async (runtime) => {
  const { config, clock } = runtime;
  const allowPrivateTargets = config.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? config.NODE_ENV === 'development';
  const db = runtime.db.db!;
  const endpointStore = await runtime.migrated(new EndpointStore(db));
  const deliveryStore = await runtime.migrated(new DeliveryStore(db, config.WEBHOOK_DELIVERY_RETENTION_DAYS));
  for (const retained of deliveryStore.retained) startPurge(runtime, retained);
  const sender = new Sender({
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    allowPrivate: allowPrivateTargets,
    maxSockets: config.WEBHOOK_CONCURRENCY_PER_ENDPOINT,
  });
  // The use cases hand manual retries to the dispatcher, which reads endpoints through them.
  const endpoints = new EndpointUseCases(
    endpointStore,
    deliveryStore,
    new Sealer(secretRing(config, 'WEBHOOK_SECRET_KEY'), ENDPOINT_SECRETS_PURPOSE),
    {
      allowPrivateTargets,
      retryNow: (delivery): Promise<void> => dispatcher.enqueue([delivery]),
      maxPerGrantor: config.WEBHOOK_MAX_ENDPOINTS,
    },
    clock,
  );
  const replicas = new ReplicaRegistry(db, 'webhooks_replicas', clock, (error) =>
    runtime.logger.warn({ err: error }, 'cannot renew the webhooks replica membership'),
  );
  await replicas.start();
  runtime.onStop(() => replicas.stop());
  const dispatcher = new Dispatcher(
    {
      store: deliveryStore,
      cursor: new DeliverySweepCursor(db),
      endpoints,
      sender,
      logger: runtime.logger.child({ component: 'dispatcher' }),
      clock,
    },
    {
      // docs/operations.md: an endpoint's concurrency holds across replicas, each taking its share.
      perEndpoint: () => Math.floor(replicas.share(config.WEBHOOK_CONCURRENCY_PER_ENDPOINT, 1)),
      // Bodies in memory: 10,000 by default (about 20 MB) before they are shared fairly between
      // grantors and their endpoints, and never twice that (docs/decisions/0082).
      waitingLimit: config.WEBHOOK_MEMORY_DELIVERIES,
      reportsBacklog: () => replicas.isFirst,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      schedule: config.WEBHOOK_RETRY_SCHEDULE,
      sweepEveryMs: 500,
    },
  );
  await dispatcher.start();
  runtime.onStop(async () => {
    await dispatcher.stop();
    sender.close();
  });
  await consumeEventsForWebhooks(
    runtime.broker,
    new GrantorEndpoints(endpointStore),
    deliveryStore,
    dispatcher,
    runtime.logger,
    clock,
  );
  return serveHttp(runtime, config.PORT, {
    realm: config.AUTH_REALM,
    jsonLimit: '16kb',
    routes: (app) => app.use(webhookRoutes(endpoints, config.PUBLIC_BASE_URL)),
  });
});
