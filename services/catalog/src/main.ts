import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { OutboxRelay } from '@rs/store';
import { migrateOnStart, runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';
import { CatalogUseCases } from './app/catalog';
import { catalogRoutes } from './http/routes';
import { SkuStore } from './store/sku-store';

const Config = z.object({
  ...serviceEnvShape('catalog'),
  PORT: env.port.default(DEFAULT_PORTS.catalog),
  PUBLIC_BASE_URL: env.baseUrl.default(`http://localhost:${DEFAULT_PORTS.gateway}`),
  AUTH_REALM: env.realm,
});

runBackend('catalog', Config, async (runtime) => {
  const store = new SkuStore(runtime.db);
  if (migrateOnStart(runtime.config.NODE_ENV)) await store.ensureIndexes();
  const relay = new OutboxRelay({
    db: runtime.db.db!,
    collection: store.model.collection.collectionName,
    client: runtime.broker,
    logger: runtime.logger,
  });
  relay.start();
  const server = await serveInternalHttp(runtime, runtime.config.PORT, {
    realm: runtime.config.AUTH_REALM,
    jsonLimit: '16kb',
    // A change stored its event: publish it now rather than at the next poll.
    afterChange: () => relay.kick(),
    routes: (app) => app.use(catalogRoutes(new CatalogUseCases(store), runtime.config.PUBLIC_BASE_URL)),
  });
  return {
    async stop() {
      await server.close();
      await relay.stop();
    },
  };
});
