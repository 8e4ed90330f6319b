import { randomUUID } from 'node:crypto';
import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { migrateOnStart, runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';
import { ownedPartitions } from './domain/due';
import { expireCommand, renewCommand } from './messaging/commands';
import { followEvents } from './messaging/events';
import { keepSchedulesRebuilt, rebuildSchedules } from './rebuild';
import { createStores } from './store/stores';
import { DueSweeper, ownedPartitionsGauge, Ticker } from './sweeper';

const Config = z.object({
  ...serviceEnvShape('scheduler'),
  PORT: env.port.default(DEFAULT_PORTS.scheduler),
  SCHEDULER_TICK_MS: z.coerce.number().int().positive().default(1000),
  SUBSCRIPTIONS_URL: env.httpUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.subscriptions}`),
  RIGHTS_URL: env.httpUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.rights}`),
  /** How often the schedules are rebuilt from the subscriptions and rights services. */
  SCHEDULER_REBUILD_MS: z.coerce.number().int().positive().default(600_000),
});

/** A replica that has not renewed its membership for this long has stopped; the others take its partitions. */
const MEMBERSHIP_TTL_MS = 3_000;

/**
 * The scheduler: the only component that decides when (DESIGN.md 1). It follows
 * `rights.events` and `subscriptions.events` into its own database and, every tick, sends
 * `rights.expire` for rights whose interval has ended and `subscriptions.renew` for
 * subscriptions whose next period has started or whose end has come, in batches, for the
 * partitions this replica owns (docs/decisions/0011).
 */
runBackend('scheduler', Config, async (runtime) => {
  const stores = createStores(runtime.db);
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

  const me = randomUUID();
  const renewMembership = () =>
    stores.partitions
      .renewMembership(me, new Date(Date.now() + MEMBERSHIP_TTL_MS))
      .catch((error: unknown) => logger.warn({ err: error }, 'cannot renew the scheduler membership'));
  await renewMembership();
  // Apart from the sweep, so a long sweep never lets the membership lapse.
  const heartbeat = setInterval(() => void renewMembership(), MEMBERSHIP_TTL_MS / 3);

  const sweepers = [
    new DueSweeper({
      store: stores.rightExpiries,
      partitions: stores.partitions,
      toCommand: expireCommand,
      broker: runtime.broker,
      logger,
    }),
    new DueSweeper({
      store: stores.subscriptionSchedules,
      partitions: stores.partitions,
      toCommand: renewCommand,
      broker: runtime.broker,
      logger,
    }),
  ];
  const ticker = new Ticker(
    runtime.config.SCHEDULER_TICK_MS,
    async () => {
      const now = new Date();
      const owned = ownedPartitions(await stores.partitions.liveMembers(now), me);
      ownedPartitionsGauge.set(owned.length);
      await Promise.all(sweepers.map((sweeper) => sweeper.sweep(owned, now)));
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
      clearInterval(heartbeat);
      await stores.partitions.leave(me).catch(() => undefined);
    },
  };
});
