/**
 * The rules of metered rights (docs/decisions/0045): a right's units, the holds on them, and
 * how a consumption, a reservation and their settlement change them. Pure: the stores write
 * what these return with one compare-and-set per right.
 */

/** Units held on a right for a consumption under way or a reservation, until `until`. */
export interface Hold {
  id: string;
  amount: number;
  until: Date;
}

/** A metered right's balance: what it granted, what is left, what is held. */
export interface Meter {
  quantity: number;
  remaining: number;
  holds: readonly Hold[];
}

/** RIGHT_MAX_HOLDS by default: the open reservations (and consumptions under way) one right may hold. */
export const DEFAULT_MAX_HOLDS = 100;

/** The units held for consumptions and reservations under way: not consumed, not available to others. */
export const heldUnits = (holds: readonly Hold[]): number => holds.reduce((sum, hold) => sum + hold.amount, 0);

/** Units anyone may take now: what is left, less what is held. */
export const available = (meter: Meter): number => meter.remaining - heldUnits(meter.holds);

/** What a change of a meter comes to: the meter after it, or why nothing changes. */
export type MeterChange =
  | { kind: 'changed'; next: Meter }
  /** Done before (a retry): nothing to write, answer as the first time. */
  | { kind: 'already' }
  | { kind: 'short'; available: number }
  /** The right holds as many holds as it may (RIGHT_MAX_HOLDS). */
  | { kind: 'full'; max: number };

/**
 * Takes `amount` units at once (one right, one write). A consumption that names itself (an
 * Idempotency-Key) never comes here: its record decides whether it was applied, however many
 * consumptions came between it and its retry (docs/decisions/0051).
 */
export function consume(meter: Meter, amount: number): MeterChange {
  if (available(meter) < amount) return { kind: 'short', available: available(meter) };
  return { kind: 'changed', next: { ...meter, remaining: meter.remaining - amount } };
}

/**
 * Holds `hold.amount` units for a consumption or reservation under way, unless it holds them
 * already; at most `maxHolds` at once, so that no right's document (and each write of it)
 * grows with the reservations open on it.
 */
export function placeHold(meter: Meter, hold: Hold, maxHolds: number): MeterChange {
  if (meter.holds.some((held) => held.id === hold.id)) return { kind: 'already' };
  if (meter.holds.length >= maxHolds) return { kind: 'full', max: maxHolds };
  if (available(meter) < hold.amount) return { kind: 'short', available: available(meter) };
  return { kind: 'changed', next: { ...meter, holds: [...meter.holds, hold] } };
}

/**
 * Settles hold `id`: `amount` of its units consumed (at most what it held; 0 releases it all),
 * the rest freed. A hold already settled is `already`.
 */
export function settleHold(meter: Meter, id: string, amount: number): MeterChange {
  const hold = meter.holds.find((held) => held.id === id);
  if (!hold) return { kind: 'already' };
  const taken = Math.min(amount, hold.amount);
  return {
    kind: 'changed',
    next: {
      ...meter,
      remaining: meter.remaining - taken,
      holds: meter.holds.filter((held) => held.id !== id),
    },
  };
}

/**
 * Adds `amount` units by hand (negative: takes them away; docs/api.md "Adjustments"):
 * `remaining` never falls below what is held (those units are promised to a consumption or a
 * reservation under way), and `quantity` rises with a balance above it. `applied`: the units
 * actually added.
 */
export function adjust(meter: Meter, amount: number): { next: Meter; applied: number } {
  const floor = Math.min(meter.remaining, heldUnits(meter.holds));
  const remaining = Math.max(floor, meter.remaining + amount);
  return {
    next: { ...meter, remaining, quantity: Math.max(meter.quantity, remaining) },
    applied: remaining - meter.remaining,
  };
}

/** Holds whose time is up at `now`: the consumption or reservation they belong to decides their fate. */
export const lapsedHolds = (meter: Meter, now: Date): Hold[] => meter.holds.filter((hold) => hold.until <= now);

/** A right a consumption by SKU may take from: visible to the caller, active, metered. */
export interface Candidate {
  rightId: string;
  end: Date;
  createdAt: Date;
  available: number;
}

/** How many units to take from which right. */
export interface Portion {
  rightId: string;
  amount: number;
}

/**
 * The burn order of a consumption by SKU: the rights ending first first, then the oldest (then
 * by id, so that every replica plans alike); each gives what it has until `amount` is reached.
 * Null when all of them together hold less: nothing is to be consumed.
 */
export function planConsumption(candidates: readonly Candidate[], amount: number): Portion[] | null {
  const ordered = [...candidates].sort(
    (a, b) =>
      a.end.getTime() - b.end.getTime() ||
      a.createdAt.getTime() - b.createdAt.getTime() ||
      (a.rightId < b.rightId ? -1 : a.rightId > b.rightId ? 1 : 0),
  );
  const plan: Portion[] = [];
  let left = amount;
  for (const candidate of ordered) {
    if (left === 0) break;
    const take = Math.min(left, candidate.available);
    if (take > 0) plan.push({ rightId: candidate.rightId, amount: take });
    left -= take;
  }
  return left === 0 ? plan : null;
}
