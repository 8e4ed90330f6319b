import { RightEventTypes, type RightEventType } from '@rs/contracts';
import { changed, conflict, heldUnits, isUsable, type Decision, type Hold, type RightEntity } from './right';

/**
 * The rules of metered rights (docs/decisions/0045), all of them: a right's units, the holds on
 * them, how usage, a consumption, a reservation, their settlement and an adjustment change a
 * right, and the burn order of a consumption by SKU. Pure: the use cases write what these
 * return with the one compare-and-set of a right. The balance arithmetic (`Meter`) is apart
 * from the right, so that its rules read (and are tested) without a right around them.
 */

/** A metered right's balance: what it granted, what is left, what is held. */
export interface Meter {
  quantity: number;
  remaining: number;
  holds: readonly Hold[];
}

/** RIGHT_MAX_HOLDS by default: the open reservations (and consumptions under way) one right may hold. */
export const DEFAULT_MAX_HOLDS = 100;

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

/** Takes `amount` units at once (one right, one write). */
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

/** A metered right's balance, or null for a plain right. */
function meterOf(right: RightEntity): Meter | null {
  if (right.quantity === null || right.remaining === null) return null;
  return { quantity: right.quantity, remaining: right.remaining, holds: right.holds };
}

/** The events of a right's first use: right.used, and service.announce when the catalog asks for it. */
const firstUseOf = (right: RightEntity, announce: boolean): RightEventType[] =>
  right.used ? [] : [RightEventTypes.used, ...(announce ? [RightEventTypes.serviceAnnounce] : [])];

/**
 * `right` with `meter`'s balance at its next generation. `consumed`: the units a consumption
 * took, which use the right; `heldEvent`: the units held changed in a way others must see at
 * once, a reservation's (right.held).
 */
function metered(
  right: RightEntity,
  meter: Meter,
  now: Date,
  change: { consumed: { amount: number; announce: boolean } | null; heldEvent: boolean },
): Decision {
  const { remaining, holds } = meter;
  const next = { ...right, remaining, holds, generation: right.generation + 1, updatedAt: now };
  const { consumed } = change;
  if (!consumed || consumed.amount === 0)
    return { kind: 'change', next, events: change.heldEvent ? [RightEventTypes.held] : [] };
  return {
    kind: 'change',
    next: { ...next, used: true },
    events: [...firstUseOf(right, consumed.announce), RightEventTypes.consumed],
    consumed: consumed.amount,
  };
}

const shortOf = (right: RightEntity, has: number, asked: number) =>
  conflict(`remaining: right ${right.rightId} has ${has} units, ${asked} asked`);

/**
 * docs/api.md "Usage": allowed only while active; the first use sets `used` (never
 * cleared) and emits right.used, plus service.announce when the catalog asks for it
 * (`announce`). A metered right gives `amount` of its units at once (or refuses, taking none),
 * each time with right.consumed. A consumption that names itself (an Idempotency-Key) is
 * decided by its record instead, however many consumptions came between it and its retry
 * (docs/decisions/0051).
 */
export function recordUsage(right: RightEntity, usage: { amount: number; announce: boolean }, now: Date): Decision {
  if (!isUsable(right, now)) return conflict(`right ${right.rightId} is not active`);
  const meter = meterOf(right);
  if (!meter) {
    // A plain right: used once, for good; a repeat changes nothing (the contract's usage).
    const firstUse = firstUseOf(right, usage.announce);
    return firstUse.length === 0 ? { kind: 'unchanged' } : changed(right, { used: true }, firstUse, now);
  }
  const taken = consume(meter, usage.amount);
  if (taken.kind !== 'changed') return shortOf(right, taken.kind === 'short' ? taken.available : 0, usage.amount);
  return metered(right, taken.next, now, { consumed: usage, heldEvent: false });
}

/**
 * Holds units of an active metered right for a consumption across rights or a reservation
 * (docs/decisions/0045): nothing is consumed yet. A reservation's hold is announced
 * (`right.held`), so that every replica's checks count it at once; a consumption's lasts
 * only until its `right.consumed`. A hold placed before is unchanged.
 */
export function holdUnits(
  right: RightEntity,
  hold: Hold,
  now: Date,
  options: { announce: boolean; maxHolds: number },
): Decision {
  const meter = meterOf(right);
  if (!meter || !isUsable(right, now)) return conflict(`right ${right.rightId} is not active`);
  const held = placeHold(meter, hold, options.maxHolds);
  if (held.kind === 'already') return { kind: 'unchanged' };
  if (held.kind === 'short') return shortOf(right, held.available, hold.amount);
  if (held.kind === 'full')
    return conflict(
      `holds: right ${right.rightId} holds ${held.max} open reservations and consumptions, the most it may (RIGHT_MAX_HOLDS); settle one first`,
    );
  return metered(right, held.next, now, { consumed: null, heldEvent: options.announce });
}

/**
 * Settles hold `id` of a right: `amount` of its units consumed (right.consumed, and the first
 * use's events, service.announce when `announce.consumed`), the rest freed (`right.held` when
 * the hold was announced, `announce.held`, and nothing was consumed). Whatever the right's
 * state now: the consumption was decided while it was active (docs/decisions/0045). A hold
 * settled before is unchanged.
 */
export function settleUnits(
  right: RightEntity,
  settlement: { id: string; amount: number; announce: { consumed: boolean; held: boolean } },
  now: Date,
): Decision {
  const meter = meterOf(right);
  if (!meter) return { kind: 'unchanged' };
  const settled = settleHold(meter, settlement.id, settlement.amount);
  if (settled.kind !== 'changed') return { kind: 'unchanged' };
  const taken = { amount: meter.remaining - settled.next.remaining, announce: settlement.announce.consumed };
  return metered(right, settled.next, now, { consumed: taken, heldEvent: settlement.announce.held });
}

/** The most units a right holds (docs/api.md "Metered rights"), by creation or by adjustments. */
export const MAX_UNITS = 1_000_000_000;

/** An adjustment that would take a right's units past `MAX_UNITS`: refused, nothing changes. */
export const exceedsMaxUnits = (right: RightEntity, amount: number): boolean =>
  right.remaining !== null && right.remaining + amount > MAX_UNITS;

/**
 * docs/api.md "Adjustments": units added to a metered right by hand (negative: taken away, never
 * below what is held), in any state but EXPIRED; `quantity` rises with a balance above it. One
 * that changes nothing (taking from an empty right) is unchanged.
 */
export function adjustUnits(right: RightEntity, amount: number, now: Date): Decision {
  const meter = meterOf(right);
  if (!meter) return conflict(`right ${right.rightId} is not metered: it has no units to adjust`);
  if (right.state === 'EXPIRED') return conflict(`right ${right.rightId} has expired`);
  const { next, applied } = adjust(meter, amount);
  if (applied === 0) return { kind: 'unchanged' };
  return {
    kind: 'change',
    next: { ...right, ...next, holds: right.holds, generation: right.generation + 1, updatedAt: now },
    events: [RightEventTypes.adjusted],
    adjusted: applied,
  };
}

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
