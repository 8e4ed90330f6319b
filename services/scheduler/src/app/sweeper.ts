import { Exchanges, MAX_BATCH_ITEMS, type CloudEvent } from '@rs/contracts';
import { SecondSweeper } from '@rs/due';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import { bucketOf } from '@rs/hashing';
import { weighedChunks } from '@rs/batching';
import { counter, gauge } from '@rs/telemetry/metrics';
import { partitionOf, READ_AHEAD_S, SECOND_LOOK_S } from '../domain/due';
import type { DueItem, DueStore } from '../store/due-store';
import type { PartitionStore } from '../store/partition-store';

const commanded = counter(
  'scheduler_commanded_items_total',
  'Due items the scheduler has commanded (several per command), by command type',
  ['type'],
);

/** Partitions this replica sweeps (replicas share them: docs/decisions/0011). */
export const ownedPartitionsGauge = gauge(
  'scheduler_owned_partitions',
  'Partitions of the due work this scheduler replica sweeps',
);

export interface SweeperOptions {
  store: DueStore;
  partitions: PartitionStore;
  /** One command for up to MAX_BATCH_ITEMS items. */
  toCommand: (items: DueItem[], now: Date) => CloudEvent;
  broker: AmqpClient;
  logger: Logger;
}

/** Seconds looked back when a partition has no saved position yet (its first sweep ever). */
const FIRST_LOOK_BACK_S = 60;
/** A position is saved at least this often while nothing is due, so a new owner goes on from near it. */
const SAVE_EVERY_MS = 10_000;
/** Items commanded per partition and sweep before the next partition's turn (bounded memory). */
const ITEMS_PER_SWEEP = 20_000;
/**
 * Seconds read per partition and sweep (each loop): a replica catching up after hours of
 * downtime reads every second it missed, and a sweep that long would hold back the next
 * look at which partitions it owns, and a graceful stop.
 */
const SECONDS_PER_SWEEP = 600;

/**
 * Finds due work of one collection and commands it in batches (docs/architecture.md "Scale";
 * docs/decisions/0011). For each partition this replica owns, a `SecondSweeper` (@rs/due)
 * reads each second by its key READ_AHEAD_S before it begins, and its items are commanded as they fall due
 * in batches of MAX_BATCH_ITEMS with publisher confirms; once it has passed and every item
 * is commanded, the second is deleted; a second is read once more SECOND_LOOK_S later for
 * items written late, and the `soon` bucket (the
 * items of this replica's partitions in it) every sweep. A publish that fails leaves the
 * second in place for the next sweep.
 */
export class DueSweeper {
  private readonly sweepers = new Map<number, SecondSweeper<DueItem>>();
  private stopping = false;

  constructor(private readonly options: SweeperOptions) {}

  /** Ends the sweep under way after the second it is on (positions saved), and sweeps no more. */
  stop(): void {
    this.stopping = true;
    for (const sweeper of this.sweepers.values()) sweeper.stop();
  }

  async sweep(owned: readonly number[], now: Date): Promise<void> {
    if (this.stopping || !this.options.broker.connected) return;
    for (const partition of this.sweepers.keys()) if (!owned.includes(partition)) this.sweepers.delete(partition);
    if (owned.length === 0) return;
    await Promise.all(owned.map((partition) => this.sweeperOf(partition).sweep(now)));
    const soon = (await this.options.store.soon()).filter(
      (item) => item.dueAt <= now && owned.includes(partitionOf(item.id)),
    );
    if (soon.length > 0) {
      await this.command(soon, now);
      await this.options.store.remove(soon);
    }
  }

  private sweeperOf(partition: number): SecondSweeper<DueItem> {
    const { store, partitions, logger } = this.options;
    let sweeper = this.sweepers.get(partition);
    if (!sweeper) {
      sweeper = new SecondSweeper<DueItem>({
        read: (second) => store.inSecond(partition, second),
        handle: (items, _second, now) => this.command(items, now),
        finish: (second) => store.removeSecond(partition, second),
        early: { dueAt: (item) => item.dueAt.getTime(), aheadS: READ_AHEAD_S },
        cursor: {
          read: () => partitions.cursor(store.collection, partition),
          save: (second) => partitions.saveCursor(store.collection, partition, second),
        },
        start: { firstLookBackS: FIRST_LOOK_BACK_S },
        perSweep: { seconds: SECONDS_PER_SWEEP, items: ITEMS_PER_SWEEP },
        secondLook: {
          afterS: SECOND_LOOK_S,
          onLate: (second, items) => logger.warn({ partition, second, items }, 'due items were written late'),
        },
        saveEveryMs: SAVE_EVERY_MS,
      });
      if (this.stopping) sweeper.stop();
      this.sweepers.set(partition, sweeper);
    }
    return sweeper;
  }

  private command(items: DueItem[], now: Date): Promise<void> {
    if (items.length > 0) this.options.broker.realTimeFirst.saw();
    return commandItems(this.options.broker, items, this.options.toCommand, now);
  }
}

/** Publishes the items' commands with confirms, all batches at once; throws if any is not confirmed. */
export async function commandItems<Item extends DueItem>(
  broker: AmqpClient,
  items: readonly Item[],
  toCommand: (items: Item[], now: Date) => CloudEvent,
  now: Date,
): Promise<void> {
  await Promise.all(
    commandBatches(items).map(async (batch) => {
      const command = toCommand(batch, now);
      await broker.publishEvent(Exchanges.commands, command);
      commanded.inc({ type: command.type }, batch.length);
    }),
  );
}

/**
 * A command's size in snapshot bytes, at most: a renewal item carries its subscription's
 * snapshot (docs/decisions/0026), up to ~25 KB with 20 templates, and 500 of those would make
 * a message larger than a broker should carry. Typical snapshots are under 1 KB, so this
 * bound almost never splits a batch.
 */
const MAX_COMMAND_SNAPSHOT_BYTES = 1_000_000;

/**
 * Items in commands of at most MAX_BATCH_ITEMS items and MAX_COMMAND_SNAPSHOT_BYTES of
 * snapshots, in the order of their buckets: the rights service reads a command's rights a
 * bucket and second at a time (docs/decisions/0027), so a command holds few buckets, most of
 * them whole, and reads little it was not sent.
 */
const commandBatches = <Item extends DueItem>(items: readonly Item[]): Item[][] =>
  weighedChunks(
    sortedBy(items, (item) => bucketOf(item.id)),
    {
      maxItems: MAX_BATCH_ITEMS,
      maxWeight: MAX_COMMAND_SNAPSHOT_BYTES,
      weightOf: (item) => (item.snapshot ? JSON.stringify(item.snapshot).length : 0),
    },
  );

function sortedBy<T>(items: readonly T[], keyOf: (item: T) => number): T[] {
  return items
    .map((item) => ({ item, key: keyOf(item) }))
    .sort((a, b) => a.key - b.key)
    .map(({ item }) => item);
}
