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
