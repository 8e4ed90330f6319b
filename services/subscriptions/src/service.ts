import { ClockTimes, NowFor } from '@rs/http';
import { followClockDeletions } from '@rs/messaging';
import { directoriesEnvShape, env, historyEnvShape, publicApiShape, serviceEnvShape } from '@rs/config';
import { startSkuDirectory } from '@rs/catalog-client';
import { defineService, serveHttp, startPurge, startRelay } from '@rs/runtime';
import { parseDuration } from '@rs/time';
import { z } from 'zod';
import { SHORTEST_PERIOD } from './domain/bounds';
import { Renewals } from './app/renewals';
import { SubscriptionUseCases } from './app/subscriptions';
import { subscriptionRoutes } from './http/routes';
import { consumeSubscriptionCommands } from './messaging/commands';
import { SUBSCRIPTION_PROGRESS, SubscriptionStore } from './store/subscription-store';
import { subscriptionHistory } from './store/subscription-history';

export const Config = z.object({
  ...serviceEnvShape('subscriptions'),
  ...publicApiShape,
  ...historyEnvShape,
  ...directoriesEnvShape,
  /** docs/operations.md: the shortest period a subscription may have, at least PT1S. */
  SUBSCRIPTION_MIN_PERIOD: env.parsed(
    'PT1M',
    (text) => {
      const period = parseDuration(text);
      return period.ok && period.value.toMillis() >= SHORTEST_PERIOD.toMillis() ? period.value : undefined;
    },
    'must be an ISO 8601 duration of at least PT1S',
  ),
});

/**
 * The subscriptions service: the API of docs/api.md, events on `subscriptions.events` and the
 * rights cascade through the outbox, and renewal: `subscriptions.renew` from the scheduler
 * becomes one `rights.issue` per due period.
 */
export const start = defineService('subscriptions', Config, async (runtime) => {
  const { config } = runtime;
  const store = await runtime.migrated(new SubscriptionStore(runtime.db));
  const history = await runtime.migrated(subscriptionHistory(runtime.db.db!, config.HISTORY_RETENTION_DAYS));
  startPurge(runtime, history.retained);
  startRelay(runtime, 'subscriptions', history);
  // Changes after creation are stored as progress records, with their events (docs/decisions/0026).
  startRelay(runtime, SUBSCRIPTION_PROGRESS, history);
  const skus = await startSkuDirectory(runtime, config.CATALOG_URL);
  // Every use case's "now" for a subscription: its test clock's time, or real time (docs/decisions/0048).
  const time = new NowFor(
    runtime.clock,
    new ClockTimes({ schedulerUrl: config.SCHEDULER_URL, signer: runtime.signer, service: 'subscriptions' }),
  );
  const publicBaseUrl = config.PUBLIC_BASE_URL;
  const subscriptions = new SubscriptionUseCases({
    store,
    changes: history,
    skus,
    publicBaseUrl,
    minPeriod: config.SUBSCRIPTION_MIN_PERIOD,
    time,
  });
  const renewals = new Renewals({ store, publicBaseUrl, time });
  await followClockDeletions(
    runtime.broker,
    'subscriptions',
    (clockId) => subscriptions.removeClock(clockId),
    runtime.logger,
  );
  await consumeSubscriptionCommands({ broker: runtime.broker, renewals, history, logger: runtime.logger });
  const routes = subscriptionRoutes({ subscriptions, renewals }, publicBaseUrl);
  return serveHttp(runtime, config.PORT, {
    realm: config.AUTH_REALM,
    jsonLimit: '64kb',
    routes: (app) => app.use(routes),
  });
});
