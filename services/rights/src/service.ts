import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { serveHttp, startRelay, startService, startSkuDirectory, type ServiceOptions } from '@rs/runtime';
import { z } from 'zod';
import { RightsUseCases } from './app/rights';
import { rightsRoutes } from './http/routes';
import { consumeRightsCommands } from './messaging/commands';
import { rightEvents } from './messaging/events';
import { RightStore } from './store/right-store';

export const Config = z.object({
  ...serviceEnvShape('rights'),
  PORT: env.port.default(DEFAULT_PORTS.rights),
  CATALOG_URL: env.baseUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.catalog}`),
  PUBLIC_BASE_URL: env.baseUrl.default(`http://localhost:${DEFAULT_PORTS.gateway}`),
  AUTH_REALM: env.realm,
});

/**
 * The rights service (spec 4.2): the rights API, `rights.issue` and `rights.expire` from the
 * subscriptions service and the scheduler, and right events through its outbox.
 */
export const start = (environment: NodeJS.ProcessEnv, options?: ServiceOptions) =>
  startService(
    'rights',
    Config,
    environment,
    async (runtime) => {
      const { config, clock } = runtime;
      const eventsFor = rightEvents(config.PUBLIC_BASE_URL);
      const store = new RightStore(runtime.db, eventsFor);
      if (runtime.migrateOnStart) await store.ensureIndexes();
      const relay = startRelay(runtime, 'rights');
      const rights = new RightsUseCases(store, await startSkuDirectory(runtime, config.CATALOG_URL), clock);
      await consumeRightsCommands(runtime.broker, rights, eventsFor, runtime.logger, () => relay.kick());
      return serveHttp(runtime, config.PORT, {
        realm: config.AUTH_REALM,
        jsonLimit: '64kb',
        relay,
        routes: (app) => app.use(rightsRoutes(rights, config.PUBLIC_BASE_URL, clock)),
      });
    },
    options,
  );
