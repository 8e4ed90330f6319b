import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { SkuDirectory } from '@rs/catalog-client';
import { runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';

const Config = z.object({
  ...serviceEnvShape('rights'),
  PORT: env.port.default(DEFAULT_PORTS.rights),
  CATALOG_URL: env.httpUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.catalog}`),
});

/**
 * The rights service. So far it keeps its SKU directory current from `catalog.events`;
 * the rights API and its state machine come with the rights issue.
 */
runBackend('rights', Config, async (runtime) => {
  const skus = new SkuDirectory({
    broker: runtime.broker,
    catalogUrl: runtime.config.CATALOG_URL,
    signer: runtime.signer,
    service: 'rights',
    logger: runtime.logger,
  });
  await skus.start();
  const server = await serveInternalHttp(runtime, runtime.config.PORT, { jsonLimit: '64kb', routes: () => undefined });
  return { stop: () => server.close() };
});
