import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { migrateOnStart, runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';
import { DueCommands, Ticker } from './due-commands';
import { followEvents } from './messaging/events';
import { keepSchedulesRebuilt, rebuildSchedules } from './rebuild';
import { createDueStores, expireCommand, renewCommand } from './schedules';

const Config = z.object({
  ...serviceEnvShape('scheduler'),
  PORT: env.port.default(DEFAULT_PORTS.scheduler),
  SCHEDULER_TICK_MS: z.coerce.number().int().positive().default(1000),
  /** A command not followed by a newer event within this time is sent again (docs/decisions/0009). */
  SCHEDULER_RESEND_MS: z.coerce.number().int().positive().default(60_000),
  SUBSCRIPTIONS_URL: env.httpUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.subscriptions}`),
  RIGHTS_URL: env.httpUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.rights}`),
  /** How often the schedules are rebuilt from the subscriptions and rights services. */
  SCHEDULER_REBUILD_MS: z.coerce.number().int().positive().default(600_000),
});

/**
 * The scheduler: the only component that decides when (DESIGN.md 1). It follows
 * `rights.events` and `subscriptions.events` into its own database and, every tick, sends
 * `rights.expire` for rights whose interval has ended and `subscriptions.renew` for
 * subscriptions whose next period has started or whose end has come.
 */
runBackend('scheduler', Config, async (runtime) => {
  const stores = createDueStores(runtime.db);
  if (migrateOnStart(runtime.config.NODE_ENV)) {
    await stores.rightExpiries.ensureIndexes();
    await stores.subscriptionSchedules.ensureIndexes();
  }
  await followEvents(runtime.broker, stores, runtime.logger);
  const logger = runtime.logger.child({ component: 'schedule' });
  const rebuilding = keepSchedulesRebuilt(
    () =>
      rebuildSchedules(
        { subscriptions: runtime.config.SUBSCRIPTIONS_URL, rights: runtime.config.RIGHTS_URL },
        runtime.signer,
        stores,
      ),
    runtime.config.SCHEDULER_REBUILD_MS,
    logger,
  );
  const due = [
    new DueCommands({
      store: stores.rightExpiries,
      toCommand: expireCommand,
      resendAfterMs: runtime.config.SCHEDULER_RESEND_MS,
      broker: runtime.broker,
      logger,
    }),
    new DueCommands({
      store: stores.subscriptionSchedules,
      toCommand: renewCommand,
      resendAfterMs: runtime.config.SCHEDULER_RESEND_MS,
      broker: runtime.broker,
      logger,
    }),
  ];
  const ticker = new Ticker(
    runtime.config.SCHEDULER_TICK_MS,
    async () => {
      const now = new Date();
      for (const commands of due) await commands.runOnce(now);
    },
    logger,
  );
  ticker.start();
  const server = await serveInternalHttp(runtime, runtime.config.PORT, { routes: () => undefined });
  return {
    async stop() {
      await server.close();
      rebuilding.stop();
      await ticker.stop();
    },
  };
});
