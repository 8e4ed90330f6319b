import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { SkuDirectory } from '@rs/catalog-client';
import { OutboxRelay } from '@rs/store';
import { migrateOnStart, runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';
import { subscriptionRoutes } from './http/routes';
import { consumeSubscriptionCommands } from './messaging/commands';
import { SubscriptionStore } from './store/subscription-store';
import { SubscriptionUseCases } from './app/subscriptions';

const Config = z.object({
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
runBackend('subscriptions', Config, async (runtime) => {
  const publicBaseUrl = runtime.config.PUBLIC_BASE_URL;
  const store = new SubscriptionStore(runtime.db);
  if (migrateOnStart(runtime.config.NODE_ENV)) await store.ensureIndexes();
  const skus = new SkuDirectory({
    broker: runtime.broker,
    catalogUrl: runtime.config.CATALOG_URL,
    signer: runtime.signer,
    service: 'subscriptions',
    logger: runtime.logger,
  });
  await skus.start();
  const relay = new OutboxRelay({
    db: runtime.db.db!,
    collection: 'subscriptions',
    client: runtime.broker,
    logger: runtime.logger,
  });
  relay.start();
  const subscriptions = new SubscriptionUseCases(store, skus, publicBaseUrl);
  await consumeSubscriptionCommands(runtime.broker, subscriptions, runtime.logger, () => relay.kick());
  const server = await serveInternalHttp(runtime, runtime.config.PORT, {
    realm: runtime.config.AUTH_REALM,
    jsonLimit: '64kb',
    // A change stored its events: publish them now rather than at the next poll.
    afterChange: () => relay.kick(),
    routes: (app) => app.use(subscriptionRoutes(subscriptions, publicBaseUrl)),
  });
  return {
    async stop() {
      await server.close();
      await relay.stop();
    },
  };
});
