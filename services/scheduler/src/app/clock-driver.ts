import { systemActor } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import { counter } from '@rs/telemetry/metrics';
import type { Clock } from '@rs/time';
import {
  ADVANCE_PATIENCE,
  latestOf,
  nextStep,
  passedInstants,
  type Attempts,
  type ClockEntity,
  type ClockWork,
} from '../domain/clock';
import { partitionOf } from '../domain/due';
import { CLOCK_EVENTS, type ClockMessages } from '../messages/clock-events';
import type { ClockStore } from '../store/clock-store';
import { commandOnClock } from './clock-commands';
import type { ClockLaneShares } from './clock-shares';
import { ClockView, KINDS, viewed, type ClockRecordings, type ClockStores } from './clock-view';

const steps = counter('scheduler_clock_steps_total', 'Steps of test clocks: commands sent, moves, advances done', [
  'step',
]);
const givenUp = counter(
  'scheduler_clock_items_given_up_total',
  'Items due on a test clock whose commands changed nothing, each time: they no longer hold its advance',
);

export interface ClockDriverOptions {
  clocks: ClockStore;
  /** What this replica records on clocks, handed over as it is recorded. */
  recordings: ClockRecordings;
  /** Whether other scheduler replicas are live (and record on clocks too). */
  othersRecord: () => boolean;
  messages: ClockMessages;
  stores: ClockStores;
  /** What each grantor has in the clock lane: what it may command now (docs/decisions/0065). */
  shares: ClockLaneShares;
  broker: AmqpClient;
  logger: Logger;
  clock: Clock;
}

/**
 * Drives the test clocks of the partitions this replica owns (docs/decisions/0048), a step per
 * tick each: command what is due within a clock's advance and was not commanded as it was
 * recorded (or was, and nothing came of it), move the clock's time up to the earliest instant
 * still outstanding, and at an advance's target with nothing outstanding, ready. Every command
 * is idempotent: a driver that crashed is followed by one that commands again what has not
 * happened (its memory of what it commanded is lost with it, which costs only repeats).
 */
export class ClockDriver {
  /** What this driver knows of each clock it drives, and what it commanded there (by version, while the latest). */
  private readonly memory = new Map<string, { view: ClockView; attempts: Map<string, Attempts> }>();

  constructor(private readonly options: ClockDriverOptions) {
    options.recordings.listen((kind, items) => {
      for (const item of items) this.memory.get(item.clockId)?.view.accept([viewed(kind, item)]);
    });
  }

  async drive(owned: readonly number[]): Promise<void> {
    if (owned.length === 0 || !this.options.broker.connected) return;
    const clocks = (await this.options.clocks.list(null)).filter((clock) => owned.includes(partitionOf(clock.clockId)));
    for (const clockId of this.memory.keys())
      if (!clocks.some((clock) => clock.clockId === clockId)) this.memory.delete(clockId);
    for (const clock of clocks) await this.step(clock);
  }

  private async step(clock: ClockEntity): Promise<void> {
    const { logger } = this.options;
    const { view, attempts } = this.memoryOf(clock.clockId);
    // A ready clock's own recordings are commanded as they are recorded: the periodic read is enough.
    const othersRecord = this.options.othersRecord() && clock.status === 'advancing';
    const readAll = await view.refresh({ othersRecord });
    let { next, latest } = await this.weigh(clock, view, attempts);
    // Done is decided on everything kept, read now, when others record: one of theirs may have landed late.
    if (next.ready && !readAll && othersRecord) {
      await view.refresh({ full: true, othersRecord });
      ({ next, latest } = await this.weigh(clock, view, attempts));
    }
    for (const ref of attempts.keys()) if (!latest.has(ref)) attempts.delete(ref);

    let current: ClockEntity | null = clock;
    if (next.time > clock.time) {
      current = await this.save(clock, { time: next.time }, CLOCK_EVENTS.advanced);
      steps.inc({ step: 'move' });
    }
    if (next.command.length > 0) {
      const now = this.options.clock();
      const commanded: ClockWork[] = [];
      for (const kind of Object.keys(KINDS) as Array<ClockWork['kind']>) {
        // Within the grantor's share of the clock lane; the rest at a later step (docs/decisions/0065).
        const due = this.options.shares.take(
          clock.grantorId,
          kind,
          next.command.filter((one) => one.kind === kind),
        );
        if (due.length === 0) continue;
        await commandOnClock(
          this.options.broker,
          kind,
          due.map((one) => ({ ...view.item(one.ref), dueAt: one.dueAt! })),
        );
        commanded.push(...due);
        // A lapse makes no version of its own to wait for: its command, durable, is enough.
        if (kind === 'hold') await view.remove(due);
      }
      for (const one of commanded) {
        const count = (attempts.get(one.ref)?.count ?? (one.commandedAt ? 1 : 0)) + 1;
        attempts.set(one.ref, { count, lastAt: now });
        if (count === ADVANCE_PATIENCE.maxAttempts) {
          givenUp.inc();
          logger.warn({ clock_id: clock.clockId, item: one.ref }, 'a test clock item was commanded thrice in vain');
        }
      }
      if (commanded.length > 0) steps.inc({ step: 'command' });
    }
    if (next.ready && current) {
      await this.save(current, { status: 'ready' }, CLOCK_EVENTS.ready);
      steps.inc({ step: 'ready' });
    }
    // What the clock's time has passed is let go of, an instant at a time: after ready is told,
    // and while it advances, now and then (deletes compete with the advance's own writes).
    const advancing = (current ?? clock).status === 'advancing' && !next.ready;
    await view.removePassed(passedInstants(view.work, next.outstanding, next.time), advancing);
  }

  /** The clock's next step from what the view holds, once what it no longer needs is let go of. */
  private async weigh(clock: ClockEntity, view: ClockView, attempts: Map<string, Attempts>) {
    const { latest, letGo } = latestOf(view.work);
    await view.remove(letGo);
    const next = nextStep(clock, latest, this.options.clock(), (ref) => attempts.get(ref));
    return { next, latest: new Set(latest.map((work) => work.ref)) };
  }

  private memoryOf(clockId: string) {
    let memory = this.memory.get(clockId);
    if (!memory) {
      memory = { view: new ClockView(clockId, this.options.stores, this.options.clock), attempts: new Map() };
      this.memory.set(clockId, memory);
    }
    return memory;
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
    const stored = await this.options.clocks.update({
      current: clock,
      next,
      outbox: this.options.messages.of(next, events, systemActor('scheduler')),
    });
    return stored ? next : null;
  }
}
