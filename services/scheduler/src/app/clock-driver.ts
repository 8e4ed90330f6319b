import { systemActor } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import { counter } from '@rs/telemetry/metrics';
import type { Clock } from '@rs/time';
import { ADVANCE_PATIENCE, latestOf, nextStep, type Attempts, type ClockEntity, type ClockWork } from '../domain/clock';
import { partitionOf } from '../domain/due';
import { CLOCK_EVENTS, type ClockMessages } from '../messaging/clock-events';
import { expireCommand, renewCommand, settleCommand, type CommandedItem } from '../messaging/commands';
import type { ClockStore } from '../store/clock-store';
import type { DueStore, StoredClockDueItem } from '../store/due-store';
import { commandItems } from './sweeper';

const steps = counter('scheduler_clock_steps_total', 'Steps of test clocks: commands sent, moves, advances done', [
  'step',
]);
const givenUp = counter(
  'scheduler_clock_items_given_up_total',
  'Items due on a test clock whose commands changed nothing, each time: they no longer hold its advance',
);

/** The scheduler's collections of due work, by the work they hold. */
const KINDS = { renewal: 'subscriptionSchedules', expiry: 'rightExpiries', hold: 'holdExpiries' } as const;
const TO_COMMAND = { renewal: renewCommand, expiry: expireCommand, hold: settleCommand } as const;

export interface ClockDriverOptions {
  clocks: ClockStore;
  messages: ClockMessages;
  stores: Record<(typeof KINDS)[keyof typeof KINDS], DueStore>;
  broker: AmqpClient;
  logger: Logger;
  clock: Clock;
}

/**
 * Drives the test clocks of the partitions this replica owns (docs/decisions/0048), a step per
 * tick each: command what is due by a clock's time (at that time), wait for its effects, move
 * the clock to the next instant something falls due, and at an advance's target, ready. The
 * clock's time is stored before the commands of an instant go out, and every command is
 * idempotent: a driver that crashed is followed by one that commands again what has not
 * happened (its memory of what it commanded is lost with it, which costs only repeats).
 */
export class ClockDriver {
  /** What this driver commanded on each clock, by version, while that version is the latest. */
  private readonly attempts = new Map<string, Map<string, Attempts>>();

  constructor(private readonly options: ClockDriverOptions) {}

  async drive(owned: readonly number[]): Promise<void> {
    if (owned.length === 0 || !this.options.broker.connected) return;
    const clocks = (await this.options.clocks.list(null)).filter((clock) => owned.includes(partitionOf(clock.clockId)));
    for (const clockId of this.attempts.keys())
      if (!clocks.some((clock) => clock.clockId === clockId)) this.attempts.delete(clockId);
    for (const clock of clocks) await this.step(clock);
  }

  private async step(clock: ClockEntity): Promise<void> {
    const { stores, logger } = this.options;
    const stored = new Map<string, { kind: ClockWork['kind']; item: StoredClockDueItem }>();
    const work: ClockWork[] = [];
    for (const kind of Object.keys(KINDS) as Array<ClockWork['kind']>) {
      for (const item of await stores[KINDS[kind]].ofClock(clock.clockId)) {
        stored.set(item.ref, { kind, item });
        work.push({ ...item, kind, expected: item.expected ?? false });
      }
    }
    const { latest, superseded } = latestOf(work);
    for (const kind of Object.keys(KINDS) as Array<ClockWork['kind']>)
      await stores[KINDS[kind]].remove(superseded.filter((version) => version.kind === kind));
    const attempts = this.attemptsOn(clock.clockId, latest);

    const now = this.options.clock();
    let current = clock;
    let next = nextStep(current, latest, now, (ref) => attempts.get(ref));
    // A move is followed at once by the commands of the instant it moved to (no tick between).
    while (next.kind === 'move') {
      const moved = await this.save(current, { time: next.to }, CLOCK_EVENTS.advanced);
      steps.inc({ step: 'move' });
      if (!moved) return;
      current = moved;
      next = nextStep(current, latest, now, (ref) => attempts.get(ref));
    }
    switch (next.kind) {
      case 'command': {
        for (const kind of Object.keys(KINDS) as Array<ClockWork['kind']>) {
          const items: CommandedItem[] = next.work
            .filter((one) => one.kind === kind)
            .map((one) => {
              const { item } = stored.get(one.ref)!;
              return { ...item, dueAt: item.dueAt! };
            });
          if (items.length === 0) continue;
          await commandItems(this.options.broker, items, TO_COMMAND[kind], current.time);
          // A lapse makes no version of its own to wait for: its command, durable, is enough.
          if (kind === 'hold') await stores.holdExpiries.remove(next.work.filter((one) => one.kind === kind));
        }
        for (const one of next.work) {
          const count = (attempts.get(one.ref)?.count ?? 0) + 1;
          attempts.set(one.ref, { count, lastAt: now });
          if (count === ADVANCE_PATIENCE.maxAttempts) {
            givenUp.inc();
            logger.warn({ clock_id: clock.clockId, item: one.ref }, 'a test clock item was commanded thrice in vain');
          }
        }
        steps.inc({ step: 'command' });
        return;
      }
      case 'ready':
        await this.save(current, { status: 'ready' }, CLOCK_EVENTS.ready);
        steps.inc({ step: 'ready' });
        return;
      default:
        return;
    }
  }

  /**
   * Stores the clock's step with its events; the clock as stored, or null when an advance
   * changed it meanwhile (it is stepped again next tick).
   */
  private async save(
    clock: ClockEntity,
    change: Partial<Pick<ClockEntity, 'time' | 'status'>>,
    events: (typeof CLOCK_EVENTS)[keyof typeof CLOCK_EVENTS],
  ): Promise<ClockEntity | null> {
    const next = { ...clock, ...change, generation: clock.generation + 1, updatedAt: this.options.clock() };
    const stored = await this.options.clocks.update(
      clock,
      next,
      this.options.messages.of(next, events, systemActor('scheduler')),
    );
    return stored ? next : null;
  }

  /** What was commanded on a clock, of what is still the latest version of something on it. */
  private attemptsOn(clockId: string, latest: readonly ClockWork[]): Map<string, Attempts> {
    const attempts = this.attempts.get(clockId) ?? new Map<string, Attempts>();
    const kept = new Set(latest.map((work) => work.ref));
    for (const ref of attempts.keys()) if (!kept.has(ref)) attempts.delete(ref);
    this.attempts.set(clockId, attempts);
    return attempts;
  }
}
