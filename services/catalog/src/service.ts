import { publicApiShape, serviceEnvShape } from '@rs/config';
import { defineService, serveHttp, startRelay } from '@rs/runtime';
import { z } from 'zod';
import { CatalogUseCases } from './app/catalog';
import { catalogRoutes } from './http/routes';
import { SkuStore } from './store/sku-store';

export const Config = z.object({ ...serviceEnvShape('catalog'), ...publicApiShape });

/** The catalog service (docs/operations.md): the admin catalog API, and `sku.*` events through its outbox. */
export const start = defineService('catalog', Config, async (runtime) => {
  const store = await runtime.migrated(new SkuStore(runtime.db));
  startRelay(runtime, store.model.collection.collectionName);
  const routes = catalogRoutes(new CatalogUseCases(store, runtime.clock), runtime.config.PUBLIC_BASE_URL);
  return serveHttp(runtime, runtime.config.PORT, {
    realm: runtime.config.AUTH_REALM,
    jsonLimit: '16kb',
    routes: (app) => app.use(routes),
  });
});
