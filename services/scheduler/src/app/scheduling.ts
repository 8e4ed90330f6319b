import type { InternalTokenSigner } from '@rs/http';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import { ReplicaRegistry } from '@rs/replicas';
import { repeat, type Clock } from '@rs/time';
import { ownedPartitions } from '../domain/due';
import { expireCommand, renewCommand, settleCommand } from '../messages/commands';
import type { createStores } from '../store/stores';
import { rebuildSchedules } from './rebuild';
import { DueSweeper, ownedPartitionsGauge, type SweeperOptions } from './sweeper';
import { ClockDriver } from './clock-driver';
import type { ClockLaneShares } from './clock-shares';
import type { ClockRecordings } from './clock-view';
import type { ClockMessages } from '../messages/clock-events';
import type { ClockStore } from '../store/clock-store';

/** Where scheduler replicas keep their memberships: a replica that stopped renewing its own leaves its partitions to the others. */
const SCHEDULER_MEMBERS = 'scheduler_members';

export interface SchedulingOptions {
  stores: ReturnType<typeof createStores>;
  /**
   * The test clocks, which the replica owning a clock's partition drives (docs/decisions/0048),
   * told what this replica records on them.
   */
  clocks: { store: ClockStore; messages: ClockMessages; recordings: ClockRecordings; shares: ClockLaneShares };
  broker: AmqpClient;
  signer: InternalTokenSigner;
  urls: { subscriptions: string; rights: string };
  tickMs: number;
  rebuildMs: number;
  logger: Logger;
  clock: Clock;
}

/**
 * The scheduler's four loops (docs/architecture.md, docs/decisions/0011): the membership this
 * replica renews to own its share of the partitions; every tick, the sweep of its partitions
 * that commands what fell due; beside it, on a ticker of its own, a step of each test clock of
 * those partitions (docs/decisions/0048, 0054); and the rebuild of its partitions' schedules
 * from the services that own the data, at start and then every `rebuildMs`.
 */
export async function startScheduling(options: SchedulingOptions): Promise<{ stop(): Promise<void> }> {
  const { stores, logger, clock } = options;
  // Replicas share the partitions by their live membership (docs/decisions/0011).
  const replicas = new ReplicaRegistry(stores.db, SCHEDULER_MEMBERS, clock, (error) =>
    logger.warn({ err: error }, 'cannot renew the scheduler membership'),
  );
  await replicas.start();
  const me = replicas.id;
  // From the members the last renewal read (every second): no query per tick.
  const owned = () => ownedPartitions(replicas.members, me);

  // At start and then every rebuildMs, of the partitions this replica owns then (docs/operations.md:
  // replicas share the work); sooner again while a service is unreachable.
  const rebuilding = repeat(
    async () => {
      // Until its membership is stored (the database was away at start), retried soon.
      if (!replicas.members.includes(me)) throw new Error('not a scheduler member yet');
      const partitions = owned();
      const { recordings } = options.clocks;
      const liveClocks = (clockIds: readonly string[]) => options.clocks.store.live(clockIds);
      const read = await rebuildSchedules({ ...options, stores, partitions, clock, recordings, liveClocks });
      logger.info({ entries: read, partitions }, 'schedules rebuilt');
    },
    {
      everyMs: options.rebuildMs,
      retryMs: Math.min(options.rebuildMs, 5_000),
      onError: (error) => logger.warn({ err: error }, 'cannot rebuild the schedules yet'),
    },
  );

  const sweeperOf = (store: SchedulingOptions['stores']['rightExpiries'], toCommand: SweeperOptions['toCommand']) =>
    new DueSweeper({ store, partitions: stores.partitions, toCommand, broker: options.broker, logger });
  const sweepers = [
    sweeperOf(stores.rightExpiries, expireCommand),
    sweeperOf(stores.subscriptionSchedules, renewCommand),
    sweeperOf(stores.holdExpiries, settleCommand),
  ];
  const clockDriver = new ClockDriver({
    clocks: options.clocks.store,
    messages: options.clocks.messages,
    recordings: options.clocks.recordings,
    shares: options.clocks.shares,
    othersRecord: () => replicas.members.some((member) => member !== me),
    stores,
    broker: options.broker,
    logger,
    clock,
  });
  const sweeping = repeat(
    async () => {
      const now = clock();
      const partitions = owned();
      ownedPartitionsGauge.set(partitions.length);
      await Promise.all(sweepers.map((sweeper) => sweeper.sweep(partitions, now)));
    },
    {
      everyMs: options.tickMs,
      immediately: false,
      onError: (error) => logger.warn({ err: error }, 'scheduler tick failed'),
    },
  );
  // A long step of a large rehearsal never holds back real time's next sweep, and waits its
  // turn behind real time's work (docs/decisions/0061).
  const driving = repeat(() => options.broker.realTimeFirst.simulated(() => clockDriver.drive(owned())), {
    everyMs: options.tickMs,
    immediately: false,
    onError: (error) => logger.warn({ err: error }, 'test clock step failed'),
  });
  return {
    async stop() {
      // A sweep under way (hours of catching up after downtime) ends after its current second.
      for (const sweeper of sweepers) sweeper.stop();
      await Promise.all([rebuilding.stop(), sweeping.stop(), driving.stop()]);
      await replicas.stop();
    },
  };
}
