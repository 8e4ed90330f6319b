import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { SkuDirectory } from '@rs/catalog-client';
import { OutboxRelay } from '@rs/store';
import { migrateOnStart, runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';
import { rightsRoutes } from './http/routes';
import { consumeRightsCommands } from './messaging/commands';
import { rightEvents } from './messaging/events';
import { RightsUseCases } from './app/rights';
import { RightStore } from './store/right-store';

const Config = z.object({
  ...serviceEnvShape('rights'),
  PORT: env.port.default(DEFAULT_PORTS.rights),
  CATALOG_URL: env.baseUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.catalog}`),
  PUBLIC_BASE_URL: env.baseUrl.default(`http://localhost:${DEFAULT_PORTS.gateway}`),
  AUTH_REALM: env.realm,
});

runBackend('rights', Config, async (runtime) => {
  const publicBaseUrl = runtime.config.PUBLIC_BASE_URL;
  const eventsFor = rightEvents(publicBaseUrl);
  const store = new RightStore(runtime.db, eventsFor);
  if (migrateOnStart(runtime.config.NODE_ENV)) await store.ensureIndexes();
  const skus = new SkuDirectory({
    broker: runtime.broker,
    catalogUrl: runtime.config.CATALOG_URL,
    signer: runtime.signer,
    service: 'rights',
    logger: runtime.logger,
  });
  await skus.start();
  const relay = new OutboxRelay({
    db: runtime.db.db!,
    collection: 'rights',
    client: runtime.broker,
    logger: runtime.logger,
  });
  relay.start();
  const rights = new RightsUseCases(store, skus);
  await consumeRightsCommands(runtime.broker, rights, eventsFor, runtime.logger, () => relay.kick());
  const server = await serveInternalHttp(runtime, runtime.config.PORT, {
    realm: runtime.config.AUTH_REALM,
    jsonLimit: '64kb',
    // A change stored its events: publish them now rather than at the next poll.
    afterChange: () => relay.kick(),
    routes: (app) => app.use(rightsRoutes(rights, publicBaseUrl)),
  });
  return {
    async stop() {
      await server.close();
      await relay.stop();
    },
  };
});
