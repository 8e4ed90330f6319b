import type { Clock, Principal } from '@rs/contracts';

/**
 * A test clock as the scheduler holds it (docs/decisions/0048): a grantor's own time, moved
 * forward only. `time` is the clock's now; `advancingTo` where the last advance goes.
 */
export interface ClockEntity {
  clockId: string;
  grantorId: string;
  time: Date;
  advancingTo: Date;
  generation: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A clock is its grantor's (and the admins'): anyone else is told it does not exist. */
export const canUseClock = (principal: Principal, clock: Pick<ClockEntity, 'grantorId'>): boolean =>
  principal.admin || (principal.scheme === 'basic' && principal.grantorId === clock.grantorId);

/** A client creates clocks for its own grantor (as subscriptions and rights), an admin for any. */
export const canCreateClockFor = (principal: Principal, grantorId: string): boolean =>
  principal.admin || (principal.scheme === 'basic' && principal.grantorId === grantorId);

/** `advancing` until the clock's time has reached where its last advance goes. */
export const statusOf = (clock: Pick<ClockEntity, 'time' | 'advancingTo'>): Clock['status'] =>
  clock.time < clock.advancingTo ? 'advancing' : 'ready';

/**
 * An advance to `to` (docs/decisions/0048): forward only, from where the last advance goes;
 * to the same instant it changes nothing. Nothing lives on a clock yet (subscriptions and
 * rights take no `clockId` until the services judge by clock time), so nothing falls due on
 * the way: the clock is there at once. Pure.
 */
export function advance(
  clock: ClockEntity,
  to: Date,
  now: Date,
): { kind: 'change'; next: ClockEntity } | { kind: 'unchanged' } | { kind: 'conflict'; reason: string } {
  if (to < clock.advancingTo)
    return {
      kind: 'conflict',
      reason: `clock ${clock.clockId} never goes back: it is at or going to ${clock.advancingTo.toISOString()}`,
    };
  if (to.getTime() === clock.advancingTo.getTime()) return { kind: 'unchanged' };
  return {
    kind: 'change',
    next: { ...clock, time: to, advancingTo: to, generation: clock.generation + 1, updatedAt: now },
  };
}

/** The clock as the API returns it. */
export function representation(clock: ClockEntity, publicBaseUrl: string): Clock {
  return {
    clockId: clock.clockId,
    href: `${publicBaseUrl}/clocks/${clock.clockId}`,
    generation: String(clock.generation),
    grantorId: clock.grantorId,
    time: clock.time.toISOString().replace('.000Z', 'Z'),
    advancingTo: clock.advancingTo.toISOString().replace('.000Z', 'Z'),
    status: statusOf(clock),
  };
}
