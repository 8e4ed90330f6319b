import { randomUUID } from 'node:crypto';
import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { migrateOnStart, runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';
import { repeat } from '@rs/time';
import { ownedPartitions } from './domain/due';
import { expireCommand, renewCommand } from './messaging/commands';
import { followEvents } from './messaging/events';
import { rebuildSchedules } from './app/rebuild';
import { createStores } from './store/stores';
import { DueSweeper, ownedPartitionsGauge } from './app/sweeper';

const Config = z.object({
  ...serviceEnvShape('scheduler'),
  PORT: env.port.default(DEFAULT_PORTS.scheduler),
  SCHEDULER_TICK_MS: z.coerce.number().int().positive().default(1000),
  SUBSCRIPTIONS_URL: env.baseUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.subscriptions}`),
  RIGHTS_URL: env.baseUrl.default(`http://127.0.0.1:${DEFAULT_PORTS.rights}`),
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
  // At start and then every SCHEDULER_REBUILD_MS; sooner again while a service is unreachable.
  const rebuilding = repeat(
    async () => {
      const read = await rebuildSchedules(
        { subscriptions: runtime.config.SUBSCRIPTIONS_URL, rights: runtime.config.RIGHTS_URL },
        runtime.signer,
        stores,
      );
      logger.info({ entries: read }, 'schedules rebuilt');
    },
    {
      everyMs: runtime.config.SCHEDULER_REBUILD_MS,
      retryMs: Math.min(runtime.config.SCHEDULER_REBUILD_MS, 5_000),
      onError: (error) => logger.warn({ err: error }, 'cannot rebuild the schedules yet'),
    },
  );

  const me = randomUUID();
  const renewMembership = () => stores.partitions.renewMembership(me, new Date(Date.now() + MEMBERSHIP_TTL_MS));
  await renewMembership().catch((error: unknown) =>
    logger.warn({ err: error }, 'cannot renew the scheduler membership'),
  );
  // Apart from the sweep, so a long sweep never lets the membership lapse.
  const heartbeat = repeat(renewMembership, {
    everyMs: MEMBERSHIP_TTL_MS / 3,
    immediately: false,
    onError: (error) => logger.warn({ err: error }, 'cannot renew the scheduler membership'),
  });

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
  const ticker = repeat(
    async () => {
      const now = new Date();
      const owned = ownedPartitions(await stores.partitions.liveMembers(now), me);
      ownedPartitionsGauge.set(owned.length);
      await Promise.all(sweepers.map((sweeper) => sweeper.sweep(owned, now)));
    },
    {
      everyMs: runtime.config.SCHEDULER_TICK_MS,
      immediately: false,
      onError: (error) => logger.warn({ err: error }, 'scheduler tick failed'),
    },
  );
  const server = await serveInternalHttp(runtime, runtime.config.PORT, { routes: () => undefined });
  return {
    async stop() {
      await server.close();
      await Promise.all([rebuilding.stop(), ticker.stop(), heartbeat.stop()]);
      await stores.partitions.leave(me).catch(() => undefined);
    },
  };
});
