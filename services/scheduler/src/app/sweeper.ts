import { Exchanges, MAX_BATCH_ITEMS, type CloudEvent } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import { chunks } from '@rs/store';
import { counter, gauge } from '@rs/telemetry/metrics';
import { partitionOf, SECOND_LOOK_S, secondOf } from '../domain/due';
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

interface Position {
  /** Last second swept. */
  second: number;
  /** Last second looked at a second time. */
  secondLook: number;
  savedAt: number;
  /** The second last saved as this partition's cursor. */
  savedSecond: number;
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
 * Finds due work of one collection and commands it in batches (DESIGN.md 1 and 2 "Scale";
 * docs/decisions/0011). For each partition this replica owns, every second that has fully
 * passed is read by its key, its items commanded in batches of MAX_BATCH_ITEMS with
 * publisher confirms, then the second is deleted and the position saved; a second is read
 * once more SECOND_LOOK_S later for items written late, and the `soon` bucket (the items of
 * this replica's partitions in it) every sweep.
 * A publish that fails leaves the second in place for the next sweep.
 */
export class DueSweeper {
  private readonly positions = new Map<number, Position>();
  private stopping = false;

  constructor(private readonly options: SweeperOptions) {}

  /** Ends the sweep under way after the second it is on (positions saved), and sweeps no more. */
  stop(): void {
    this.stopping = true;
  }

  async sweep(owned: readonly number[], now: Date): Promise<void> {
    if (this.stopping || !this.options.broker.connected) return;
    for (const partition of this.positions.keys()) if (!owned.includes(partition)) this.positions.delete(partition);
    if (owned.length === 0) return;
    await Promise.all(owned.map((partition) => this.sweepPartition(partition, now)));
    const soon = (await this.options.store.soon()).filter(
      (item) => item.dueAt <= now && owned.includes(partitionOf(item.id)),
    );
    if (soon.length > 0) {
      await this.command(soon, now);
      await this.options.store.remove(soon);
    }
  }

  private async sweepPartition(partition: number, now: Date): Promise<void> {
    const { store } = this.options;
    const position = this.positions.get(partition) ?? (await this.load(partition, now));
    this.positions.set(partition, position);
    const lastPassed = secondOf(now) - 1;
    let commandedNow = 0;
    const until = Math.min(lastPassed, position.second + SECONDS_PER_SWEEP);
    while (!this.stopping && position.second < until && commandedNow < ITEMS_PER_SWEEP) {
      const second = position.second + 1;
      const items = await store.inSecond(partition, second);
      if (items.length > 0) {
        await this.command(items, now);
        await store.removeSecond(partition, second);
        commandedNow += items.length;
      }
      position.second = second;
      if (items.length > 0 || now.getTime() - position.savedAt >= SAVE_EVERY_MS)
        await this.save(partition, position, now);
    }
    // Catching up, or stopping: a successor goes on from here rather than from the last save.
    if (position.second > position.savedSecond && (position.second < lastPassed || this.stopping))
      await this.save(partition, position, now);
    const lookUntil = Math.min(position.second - SECOND_LOOK_S, position.secondLook + SECONDS_PER_SWEEP);
    while (!this.stopping && position.secondLook < lookUntil) {
      const second = position.secondLook + 1;
      const late = await store.inSecond(partition, second);
      if (late.length > 0) {
        this.options.logger.warn({ partition, second, items: late.length }, 'due items were written late');
        await this.command(late, now);
        await store.removeSecond(partition, second);
      }
      position.secondLook = second;
    }
  }

  private async load(partition: number, now: Date): Promise<Position> {
    const saved = await this.options.partitions.cursor(this.options.store.collection, partition);
    const second = saved ?? secondOf(now) - FIRST_LOOK_BACK_S;
    return { second, secondLook: second - SECOND_LOOK_S, savedAt: now.getTime(), savedSecond: second };
  }

  private async save(partition: number, position: Position, now: Date): Promise<void> {
    await this.options.partitions.saveCursor(this.options.store.collection, partition, position.second);
    position.savedAt = now.getTime();
    position.savedSecond = position.second;
  }

  /** Publishes the items' commands with confirms, all batches at once; throws if any is not confirmed. */
  private async command(items: DueItem[], now: Date): Promise<void> {
    await Promise.all(
      chunks(items, MAX_BATCH_ITEMS).map(async (batch) => {
        const command = this.options.toCommand(batch, now);
        await this.options.broker.publishEvent(Exchanges.commands, command);
        commanded.inc({ type: command.type }, batch.length);
      }),
    );
  }
}
