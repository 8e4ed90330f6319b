/**
 * The one clock abstraction: what time it is now. Every use case, consumer, loop
 * and cache takes one, so that tests pin time instead of sleeping; production uses the
 * system clock.
 */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** A clock for tests: fixed at `start` until it is moved. */
export interface ManualClock extends Clock {
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void;
  set(at: Date | string): void;
}

export function manualClock(start: Date | string): ManualClock {
  let now = new Date(start).getTime();
  const clock = (() => new Date(now)) as ManualClock;
  clock.advance = (ms) => {
    now += ms;
  };
  clock.set = (at) => {
    now = new Date(at).getTime();
  };
  return clock;
}

/**
 * The instant a command of the scheduler is judged at (docs/decisions/0048): for what lives on a
 * test clock, the command's time alone (its clock's time when it was sent); for the rest the later
 * of it and this service's clock, which may be a little behind the scheduler's, so that a due
 * command never turns into a no-op.
 */
export function judgedInstant(commandTime: Date, clock: Clock, onTestClock: boolean): Date {
  return onTestClock ? commandTime : new Date(Math.max(clock().getTime(), commandTime.getTime()));
}
