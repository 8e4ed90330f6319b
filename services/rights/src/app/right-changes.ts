import type { Actor } from '@rs/contracts';
import { changeOne, type ChangeOutcome } from '@rs/store';
import { asOf, type Decision, type RightEntity } from '../domain/right';
import type { RightMessages } from '../messages/events';
import type { RightStore } from '../store/right-store';
import { unitsConsumed } from './metering-metrics';
import type { ObjectTime } from './time';

/** A right as of an instant of its timeline (real time, or its test clock's), and that instant. */
export interface Judged {
  right: RightEntity;
  now: Date;
}

/** A change of a right the domain decided, to be written. */
export type RightChange = Extract<Decision, { kind: 'change' }>;

/** What changes of rights are made with. */
export interface RightChangesOptions {
  store: RightStore;
  messages: RightMessages;
  /** "Now" for each right: its test clock's time, or real time (docs/decisions/0048). */
  time: ObjectTime;
}

/** How one change of one right is decided, and by whom. */
export interface RightChangeSteps {
  /** Who makes it: its events and its history entry name them. */
  actor: Actor;
  decide(right: RightEntity): Decision | Promise<Decision>;
  /** Throws the caller's refusal when it may not make this change. */
  authorize?(right: RightEntity): void;
  /** The generation the caller saw (If-Match): another is 412. */
  expectedGeneration?: number | undefined;
  /** The right as the caller has just read it: decided on first, read again after a lost race only. */
  known?: RightEntity;
  /** Aborted when the caller stopped waiting: a change not begun by then is not begun. */
  caller?: AbortSignal | undefined;
}

/**
 * Every change of a right, metering's included, goes through here (docs/architecture.md "The
 * change pipeline"): the right read as of its now (docs/decisions/0027), the domain's decision,
 * one compare-and-set of the right with its events, and all of it again when another writer
 * came first. Units consumed are counted once stored.
 */
export class RightChanges {
  constructor(private readonly options: RightChangesOptions) {}

  /**
   * A right as of its now (docs/decisions/0027), and that now: one whose interval has ended reads
   * EXPIRED, whether or not its expiry is written yet; null when there is none.
   */
  async find(userId: string, rightId: string): Promise<Judged | null> {
    const right = await this.options.store.find(userId, rightId);
    if (!right) return null;
    const now = await this.options.time.one(right);
    return { right: asOf(right, now), now };
  }

  change(
    target: { userId: string; rightId: string },
    steps: RightChangeSteps,
  ): Promise<ChangeOutcome<RightEntity, Omit<RightChange, 'kind'>>> {
    let known = steps.known;
    return changeOne({
      what: `right ${target.rightId}`,
      load: () => {
        const first = known;
        known = undefined;
        return first
          ? Promise.resolve(first)
          : this.find(target.userId, target.rightId).then((found) => found?.right ?? null);
      },
      ...(steps.authorize ? { authorize: steps.authorize } : {}),
      expectedGeneration: steps.expectedGeneration,
      decide: steps.decide,
      write: (current, change) => this.write(current, change, steps.actor),
      caller: steps.caller,
    });
  }

  private async write(current: RightEntity, change: RightChange, actor: Actor): Promise<boolean> {
    const { next, events, removes, consumed, adjusted } = change;
    const stored = await this.options.store.update({
      current,
      next,
      outbox: this.options.messages.of(next, events, actor, consumed ?? adjusted),
      ...(removes ? { removes } : {}),
    });
    if (stored && consumed) unitsConsumed.inc(consumed);
    return stored;
  }
}
