import { publicApiShape, serviceEnvShape, serviceUrl } from '@rs/config';
import { defineService, serveHttp, startRelay } from '@rs/runtime';
import { parseDuration } from '@rs/time';
import { z } from 'zod';
import { ClockUseCases } from './app/clocks';
import { ClockLaneShares } from './app/clock-shares';
import { ClockRecordings } from './app/clock-view';
import { ADVANCE_PATIENCE } from './domain/clock';
import { startScheduling } from './app/scheduling';
import { clockRoutes } from './http/routes';
import { ClockMessages } from './messages/clock-events';
import { ClockStore } from './store/clock-store';
import { DueRecording } from './app/due-recording';
import { followEvents, followHolds } from './messaging/events';
import { createStores } from './store/stores';

export const Config = z.object({
  ...serviceEnvShape('scheduler'),
  ...publicApiShape,
  /** Test clocks a grantor may have (docs/decisions/0048); 0 turns them off. */
  TEST_CLOCKS_MAX: z.coerce.number().int().min(0).max(1000).default(10),
  /** docs/api.md "Test clocks": the subscriptions and rights created on one clock, and how far past real time a clock goes. */
  TEST_CLOCK_MAX_OBJECTS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  TEST_CLOCK_MAX_ADVANCE: z
    .string()
    .default('P10Y')
    .refine((text) => {
      const parsed = parseDuration(text);
      return parsed.ok && parsed.value.toMillis() > 0;
    }, 'must be an ISO 8601 duration above zero, such as P10Y'),
  /**
   * The items on test clocks a replica keeps commanded at once, shared equally by the grantors
   * that have some (docs/decisions/0065): what another grantor's rehearsal waits behind at most.
   */
  TEST_CLOCK_LANE_ITEMS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  SCHEDULER_TICK_MS: z.coerce.number().int().positive().default(1000),
  SUBSCRIPTIONS_URL: serviceUrl('subscriptions'),
  RIGHTS_URL: serviceUrl('rights'),
  /** How often the schedules are rebuilt from the subscriptions and rights services. */
  SCHEDULER_REBUILD_MS: z.coerce.number().int().positive().default(600_000),
});

/**
 * The scheduler: the only component that decides when (docs/architecture.md). It follows
 * `rights.events` and `subscriptions.events` into its own database and, every tick, sends
 * `rights.expire` for rights whose interval has ended, `subscriptions.renew` for
 * subscriptions whose next period has started or whose end has come, and `rights.settle` for
 * holds whose time is up (told by `scheduler.hold`), in batches, for the partitions this
 * replica owns (docs/decisions/0011, 0045); and it steps the test clocks of those partitions
 * through their advances (docs/decisions/0048).
 */
export const start = defineService('scheduler', Config, async (runtime) => {
  const { config, clock } = runtime;
  const stores = createStores(runtime.db);
  await runtime.migrated(stores.rightExpiries);
  await runtime.migrated(stores.subscriptionSchedules);
  await runtime.migrated(stores.holdExpiries);
  const clocks = await runtime.migrated(new ClockStore(runtime.db));
  // What this replica records on test clocks goes straight to its clock driver too.
  const recordings = new ClockRecordings();
  const shares = new ClockLaneShares({
    total: config.TEST_CLOCK_LANE_ITEMS,
    forgetAfterMs: ADVANCE_PATIENCE.recommandAfterMs,
    clock,
  });
  const live = (ids: readonly string[]) => clocks.live(ids);
  const recording = new DueRecording({
    broker: runtime.broker,
    stores,
    logger: runtime.logger,
    clock,
    liveClocks: live,
    recordings,
    shares,
    createdOnClock: (clockId, ids) => clocks.confirmPlaces(clockId, ids),
  });
  await followEvents(runtime.broker, recording, runtime.logger);
  await followHolds(runtime.broker, recording, runtime.logger);
  startRelay(runtime, clocks.model.collection.collectionName);
  const clockMessages = new ClockMessages(config.PUBLIC_BASE_URL);
  const scheduling = await startScheduling({
    stores,
    clocks: { store: clocks, messages: clockMessages, recordings, shares },
    broker: runtime.broker,
    signer: runtime.signer,
    urls: { subscriptions: config.SUBSCRIPTIONS_URL, rights: config.RIGHTS_URL },
    tickMs: config.SCHEDULER_TICK_MS,
    rebuildMs: config.SCHEDULER_REBUILD_MS,
    logger: runtime.logger.child({ component: 'schedule' }),
    clock,
  });
  runtime.onStop(() => scheduling.stop());
  const routes = clockRoutes(
    new ClockUseCases(clocks, clockMessages, {
      maxPerGrantor: config.TEST_CLOCKS_MAX,
      maxObjects: config.TEST_CLOCK_MAX_OBJECTS,
      maxAdvance: config.TEST_CLOCK_MAX_ADVANCE,
      clock,
      // What the scheduler keeps of a deleted clock's objects goes with it (docs/decisions/0048).
      forget: async (clockId) => {
        for (const store of [stores.subscriptionSchedules, stores.rightExpiries, stores.holdExpiries])
          await store.removeClock(clockId);
      },
      // Kept as a renewal's issued rights are (DueRecording): expected, under the clock's time.
      expect: async (onClock, { kind, id, connectId }) => {
        const [work, store] =
          kind === 'subscription'
            ? (['renewal', stores.subscriptionSchedules] as const)
            : (['expiry', stores.rightExpiries] as const);
        const expected = { id, sequence: 0, connectId, clockId: onClock.clockId, dueAt: null, expected: true };
        recordings.recorded(work, await store.recordOnClocks([{ ...expected, instant: onClock.time }], clock));
      },
    }),
    config.PUBLIC_BASE_URL,
  );
  return serveHttp(runtime, config.PORT, {
    realm: config.AUTH_REALM,
    jsonLimit: '16kb',
    routes: (app) => app.use(routes),
  });
});
