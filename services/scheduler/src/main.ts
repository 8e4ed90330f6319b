import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { migrateOnStart, runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';
import { ExpiryScheduler } from './expiry';
import { followRightEvents } from './messaging/right-events';
import { ExpiryStore } from './store/expiry-store';

const Config = z.object({
  ...serviceEnvShape('scheduler'),
  PORT: env.port.default(DEFAULT_PORTS.scheduler),
  SCHEDULER_TICK_MS: z.coerce.number().int().positive().default(1000),
});

/**
 * The scheduler: the only component that decides when (DESIGN.md 1). It follows
 * `rights.events` into its own projection and sends `rights.expire` when a right's
 * interval has ended. Renewals of subscriptions come with the subscriptions issue.
 */
runBackend('scheduler', Config, async (runtime) => {
  const expiries = new ExpiryStore(runtime.db);
  if (migrateOnStart(runtime.config.NODE_ENV)) await expiries.ensureIndexes();
  await followRightEvents(runtime.broker, expiries, runtime.logger);
  const scheduler = new ExpiryScheduler({
    expiries,
    broker: runtime.broker,
    logger: runtime.logger.child({ component: 'expiry' }),
    tickMs: runtime.config.SCHEDULER_TICK_MS,
  });
  scheduler.start();
  const server = await serveInternalHttp(runtime, runtime.config.PORT, { routes: () => undefined });
  return {
    async stop() {
      await server.close();
      await scheduler.stop();
    },
  };
});
