import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { serveHttp, startRelay, startService, type ServiceOptions } from '@rs/runtime';
import { z } from 'zod';
import { CatalogUseCases } from './app/catalog';
import { catalogRoutes } from './http/routes';
import { SkuStore } from './store/sku-store';

export const Config = z.object({
  ...serviceEnvShape('catalog'),
  PORT: env.port.default(DEFAULT_PORTS.catalog),
  PUBLIC_BASE_URL: env.baseUrl.default(`http://localhost:${DEFAULT_PORTS.gateway}`),
  AUTH_REALM: env.realm,
});

/** The catalog service (DESIGN.md 6): the admin catalog API, and `sku.*` events through its outbox. */
export const start = (environment: NodeJS.ProcessEnv, options?: ServiceOptions) =>
  startService(
    'catalog',
    Config,
    environment,
    async (runtime) => {
      const { config } = runtime;
      const store = new SkuStore(runtime.db);
      if (runtime.migrateOnStart) await store.ensureIndexes();
      const catalog = new CatalogUseCases(store, runtime.clock);
      return serveHttp(runtime, config.PORT, {
        realm: config.AUTH_REALM,
        jsonLimit: '16kb',
        relay: startRelay(runtime, store.model.collection.collectionName),
        routes: (app) => app.use(catalogRoutes(catalog, config.PUBLIC_BASE_URL)),
      });
    },
    options,
  );
