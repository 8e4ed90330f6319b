import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { serveHttp, startRelay, startService, startSkuDirectory, type ServiceOptions } from '@rs/runtime';
import { z } from 'zod';
import { SubscriptionUseCases } from './app/subscriptions';
import { subscriptionRoutes } from './http/routes';
import { consumeSubscriptionCommands } from './messaging/commands';
import { SubscriptionStore } from './store/subscription-store';

export const Config = z.object({
  ...serviceEnvShape('subscriptions'),
  PORT: env.port.default(DEFAULT_PORTS.subscriptions),
  CATALOG_URL: env.baseUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.catalog}`),
  PUBLIC_BASE_URL: env.baseUrl.default(`http://localhost:${DEFAULT_PORTS.gateway}`),
  AUTH_REALM: env.realm,
});

/**
 * The subscriptions service: the API of spec 4.1, events on `subscriptions.events` and the
 * rights cascade through the outbox, and renewal: `subscriptions.renew` from the scheduler
 * becomes one `rights.issue` per due period.
 */
export const start = (environment: NodeJS.ProcessEnv, options?: ServiceOptions) =>
  startService(
    'subscriptions',
    Config,
    environment,
    async (runtime) => {
      const { config } = runtime;
      const store = new SubscriptionStore(runtime.db);
      if (runtime.migrateOnStart) await store.ensureIndexes();
      const relay = startRelay(runtime, 'subscriptions');
      const skus = await startSkuDirectory(runtime, config.CATALOG_URL);
      const subscriptions = new SubscriptionUseCases(store, skus, config.PUBLIC_BASE_URL, runtime.clock);
      await consumeSubscriptionCommands(runtime.broker, subscriptions, runtime.logger, () => relay.kick());
      return serveHttp(runtime, config.PORT, {
        realm: config.AUTH_REALM,
        jsonLimit: '64kb',
        relay,
        routes: (app) => app.use(subscriptionRoutes(subscriptions, config.PUBLIC_BASE_URL)),
      });
    },
    options,
  );
