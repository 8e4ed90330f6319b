import type { ClockCreation } from '@rs/contracts';

/** Something that may live on a test clock: null or absent, real time. */
export interface OnClock {
  clockId?: string | null;
}

/**
 * "Now" for what the rights use cases judge (docs/decisions/0048): a test clock's time for what
 * lives on one, real time for the rest. Their one source of time, asked once per request and
 * handed to the answer; the service's clock client (`NowFor`) answers it.
 */
export interface ObjectTime {
  /** Real time: ids, and what lives on no clock. */
  real(): Date;
  /** Each object's now, its clocks asked once. */
  of(objects: Iterable<OnClock>): Promise<(object: OnClock) => Date>;
  one(object: OnClock): Promise<Date>;
  /** `of` for a change a caller asks of these objects: 409 while a clock of theirs is advancing. */
  forChangeOf(objects: Iterable<OnClock>): Promise<(object: OnClock) => Date>;
  forChange(object: OnClock): Promise<Date>;
  /** The time of a clock the caller names to read or consume on it; 404 when there is none. */
  ofNamedClock(clockId: string): Promise<Date>;
  /** The time of the clock a creation names (announced to the scheduler first), or real time. */
  forCreation(
    creation: { clockId?: string | undefined; grantorId: string },
    object: Omit<ClockCreation, 'grantorId'>,
  ): Promise<Date>;
}
