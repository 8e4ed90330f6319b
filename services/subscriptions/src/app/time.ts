import type { ClockCreation } from '@rs/contracts';

/** Something that may live on a test clock: null or absent, real time. */
export interface OnClock {
  clockId?: string | null;
}

/**
 * "Now" for the subscriptions the use cases judge (docs/decisions/0048): a test clock's time for
 * one that lives on it, real time for the rest. Their one source of time; the service's clock
 * client (`NowFor`) answers it.
 */
export interface SubscriptionTime {
  /** Real time: ids, and what lives on no clock. */
  real(): Date;
  /** A subscription's now for a change a caller asks: 409 while its test clock is advancing. */
  forChange(object: OnClock): Promise<Date>;
  /** The time of the clock a creation names (announced to the scheduler first), or real time. */
  forCreation(
    creation: { clockId?: string | undefined; grantorId: string },
    object: Omit<ClockCreation, 'grantorId'>,
  ): Promise<Date>;
}
