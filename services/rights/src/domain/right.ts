import {
  RightEventTypes,
  type ExpiryEntry,
  type Link,
  type ProjectedRight,
  type Right,
  type RightEventType,
  type RightState,
} from '@rs/contracts';
import { instantAfter } from '@rs/time';
import { adjust, available, consume, placeHold, settleHold, type Hold, type Meter } from './metering';

/** A right as the service holds it (docs/api.md), free of storage details. */
export interface RightEntity {
  rightId: string;
  userId: string;
  state: RightState;
  grantorId: string;
  grantorContext: string | null;
  serviceProviderId: string | null;
  sku: string;
  payload: unknown;
  used: boolean;
  /** A metered right's units and those not yet consumed (docs/decisions/0045); null on a plain right. */
  quantity: number | null;
  remaining: number | null;
  /** Units held for consumptions and reservations under way (docs/decisions/0045). */
  holds: readonly Hold[];
  start: Date;
  end: Date;
  /** docs/api.md "Grace": how long it stays usable after `end` (an ISO 8601 duration), or null. */
  grace: string | null;
  /** When it stops being usable and expires: `end`, or the end of its grace. */
  expiresAt: Date;
  timeInterval: string;
  subscriptionId: string | null;
  /** docs/decisions/0048: the test clock it lives on (every "now" of it is that clock's time), or null. */
  clockId: string | null;
  generation: number;
  createdAt: Date;
  updatedAt: Date;
}

export type RightCommand = 'activate' | 'suspend';

/** What writing an expiry needs of a right read as EXPIRED (`asOf`). */
export type ReadExpiry = Pick<RightEntity, 'rightId' | 'generation' | 'state' | 'updatedAt'>;

/**
 * docs/api.md "Rights": where each command leads from each state. `same` is
 * an accepted no-op (204, nothing changes); a missing entry is a conflict (409).
 */
export const TRANSITIONS: Record<RightState, Partial<Record<RightCommand, RightState | 'same'>>> = {
  CREATED: { activate: 'ACTIVE', suspend: 'SUSPENDED' },
  ACTIVE: { activate: 'same', suspend: 'SUSPENDED' },
  SUSPENDED: { activate: 'ACTIVE', suspend: 'same' },
  EXPIRED: {},
};

const EVENT_OF: Record<RightCommand, RightEventType> = {
  activate: RightEventTypes.activated,
  suspend: RightEventTypes.suspended,
};

export type Decision =
  /**
   * `consumed`: the units the change took from a metered right (its `right.consumed` says so);
   * `adjusted`: the units an adjustment added (its `right.adjusted` says so).
   */
  | {
      kind: 'change';
      next: RightEntity;
      events: RightEventType[];
      removes?: true;
      consumed?: number;
      adjusted?: number;
    }
  | { kind: 'unchanged' }
  | { kind: 'conflict'; reason: string };

const conflict = (reason: string): Decision => ({ kind: 'conflict', reason });

/** docs/api.md `active`: state ACTIVE and `now` inside [start, end). */
export function isActive(right: RightEntity, now: Date): boolean {
  return right.state === 'ACTIVE' && right.start <= now && now < right.end;
}

/** When a right ending at `end` with `grace` expires (docs/api.md "Grace"); `grace` was validated by its contract. */
export function expiryOf(end: Date, grace: string | null): Date {
  return (grace === null ? null : instantAfter(end, grace)) ?? end;
}

/** Its interval and its grace are over (docs/api.md "Grace"): it is EXPIRED as of `now`. */
export function hasEnded(right: Pick<RightEntity, 'expiresAt'>, now: Date): boolean {
  return right.expiresAt <= now;
}

/** Its interval has ended and its grace has not (docs/api.md "Grace"). */
export function isInGrace(right: RightEntity, now: Date): boolean {
  return right.state === 'ACTIVE' && right.end <= now && now < right.expiresAt;
}

/** Usage and consumption are allowed: active, or in its grace (docs/api.md "Grace"). */
export function isUsable(right: RightEntity, now: Date): boolean {
  return isActive(right, now) || isInGrace(right, now);
}

/**
 * docs/api.md: an ACTIVE or SUSPENDED right whose interval (and grace) has ended is EXPIRED.
 * That follows from the interval (docs/decisions/0027): read at `now`, such a right is EXPIRED
 * at its next generation, changed when it ended, whether or not its store has written the
 * expiry yet. Pure.
 */
export function asOf(stored: RightEntity, now: Date): RightEntity {
  if ((stored.state !== 'ACTIVE' && stored.state !== 'SUSPENDED') || !hasEnded(stored, now)) return stored;
  return { ...stored, state: 'EXPIRED', generation: stored.generation + 1, updatedAt: stored.expiresAt };
}

function changed(right: RightEntity, patch: Partial<RightEntity>, events: RightEventType[], now: Date): Decision {
  return { kind: 'change', next: { ...right, ...patch, generation: right.generation + 1, updatedAt: now }, events };
}

/** Activate or suspend (expiry follows from the interval: `asOf`). */
export function decide(right: RightEntity, command: RightCommand, now: Date): Decision {
  const target = TRANSITIONS[right.state][command];
  if (target === undefined) {
    return conflict(
      right.state === 'EXPIRED' ? `right ${right.rightId} has expired` : `cannot ${command} a ${right.state} right`,
    );
  }
  if (target === 'same') return { kind: 'unchanged' };
  return changed(right, { state: target }, [EVENT_OF[command]], now);
}

/**
 * docs/api.md "Plan changes": a right of the templates a change replaced ends at the change's
 * instant `at` (`text`, whole seconds): its interval ends there, without grace (its user has the
 * new plan's rights), and it is EXPIRED with `right.expired`. The change is the record of when
 * the old plan ended, so an end that arrives late (its command delayed past the right's own
 * end, as after a crash before the change's outbox was relayed) still cuts the interval, and
 * its `right.expired` comes again with the cut interval. A right that starts only at `at` or
 * later (an earlier change's rest of the period, replaced within its first second) never held
 * anything: it is removed (`right.removed`), so that it overlaps nothing. A right in its grace
 * keeps its interval and expires if it has not; a right cut already is left as it is. Pure.
 */
export function endAt(right: RightEntity, at: { instant: Date; text: string }, now: Date): Decision {
  if (at.instant <= right.start) return removal(right, now);
  const ending = { state: 'EXPIRED' as const, grace: null, expiresAt: at.instant };
  if (right.start < at.instant && at.instant < right.end) {
    const startText = right.timeInterval.slice(0, right.timeInterval.indexOf('/'));
    const cut = { end: at.instant, timeInterval: `${startText}/${at.text}` };
    return changed(right, { ...ending, ...cut }, [RightEventTypes.expired], now);
  }
  if (right.state === 'EXPIRED' || hasEnded(right, at.instant)) return { kind: 'unchanged' };
  return changed(right, ending, [RightEventTypes.expired], now);
}

/**
 * A right a plan change ended before it was issued (docs/decisions/0052): what its id is kept
 * as, so that its issue creates nothing. It never held anything: EXPIRED, an instant long.
 */
export function supersededBeforeIssue(
  target: { rightId: string; userId: string; subscriptionId: string },
  at: Date,
  now: Date,
): RightEntity {
  const instant = at.toISOString().replace('.000Z', 'Z');
  return {
    ...target,
    state: 'EXPIRED',
    grantorId: '',
    grantorContext: null,
    serviceProviderId: null,
    sku: '',
    payload: null,
    used: false,
    quantity: null,
    remaining: null,
    holds: [],
    start: at,
    end: at,
    grace: null,
    expiresAt: at,
    timeInterval: `${instant}/${instant}`,
    clockId: null,
    generation: 1,
    createdAt: now,
    updatedAt: now,
  };
}

/** docs/api.md "Rights": its grantor removes it whatever its state; right.removed. */
export function removal(right: RightEntity, now: Date): Decision {
  const next = { ...right, generation: right.generation + 1, updatedAt: now };
  return { kind: 'change', next, events: [RightEventTypes.removed], removes: true };
}

/** A metered right's balance, or null for a plain right. */
export function meterOf(right: RightEntity): Meter | null {
  if (right.quantity === null || right.remaining === null) return null;
  return { quantity: right.quantity, remaining: right.remaining, holds: right.holds };
}

/** The units anyone may take from a right now (what is left less what is held); null for a plain right. */
export function availableOf(right: RightEntity): number | null {
  const meter = meterOf(right);
  return meter && available(meter);
}

/** The events of a right's first use: right.used, and service.announce when the catalog asks for it. */
const firstUseOf = (right: RightEntity, announce: boolean): RightEventType[] =>
  right.used ? [] : [RightEventTypes.used, ...(announce ? [RightEventTypes.serviceAnnounce] : [])];

/** `right` with `meter`'s balance at its next generation; a consumption of `consumed` units uses it. */
function metered(
  right: RightEntity,
  meter: Meter,
  now: Date,
  consumed: { amount: number; announce: boolean } | null,
  /** The units held changed in a way others must see at once: a reservation's (right.held). */
  heldEvent = false,
): Decision {
  const { remaining, holds } = meter;
  const next = { ...right, remaining, holds, generation: right.generation + 1, updatedAt: now };
  if (!consumed || consumed.amount === 0)
    return { kind: 'change', next, events: heldEvent ? [RightEventTypes.held] : [] };
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
 * cleared) and emits right.used, plus service.announce when the catalog asks for it. A
 * metered right gives `amount` of its units (or refuses, taking none), each time with
 * right.consumed. (A consumption retried under its Idempotency-Key is decided by its record
 * instead: docs/decisions/0051.)
 */
export function recordUsage(right: RightEntity, now: Date, announce: boolean, amount: number): Decision {
  if (!isUsable(right, now)) return conflict(`right ${right.rightId} is not active`);
  const meter = meterOf(right);
  if (!meter) {
    // A plain right: used once, for good; a repeat changes nothing (the contract's usage).
    const firstUse = firstUseOf(right, announce);
    return firstUse.length === 0 ? { kind: 'unchanged' } : changed(right, { used: true }, firstUse, now);
  }
  const taken = consume(meter, amount);
  if (taken.kind !== 'changed') return shortOf(right, taken.kind === 'short' ? taken.available : 0, amount);
  return metered(right, taken.next, now, { amount, announce });
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
  return metered(right, held.next, now, null, options.announce);
}

/**
 * Settles hold `id` of a right: `amount` of its units consumed (right.consumed, and the first
 * use's events), the rest freed (`right.held` when the hold was announced and nothing was
 * consumed). Whatever the right's state now: the consumption was decided while it was active
 * (docs/decisions/0045). A hold settled before is unchanged.
 */
export function settleUnits(
  right: RightEntity,
  id: string,
  amount: number,
  now: Date,
  announce: { consumed: boolean; held: boolean },
): Decision {
  const meter = meterOf(right);
  if (!meter) return { kind: 'unchanged' };
  const settled = settleHold(meter, id, amount);
  if (settled.kind !== 'changed') return { kind: 'unchanged' };
  const taken = { amount: meter.remaining - settled.next.remaining, announce: announce.consumed };
  return metered(right, settled.next, now, taken, announce.held);
}

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
    next: {
      ...right,
      quantity: next.quantity,
      remaining: next.remaining,
      generation: right.generation + 1,
      updatedAt: now,
    },
    events: [RightEventTypes.adjusted],
    adjusted: applied,
  };
}

/** A right as the scheduler rebuilds its expiries from it (the internal listing, docs/decisions/0009). */
export function expiryEntry(right: RightEntity): ExpiryEntry {
  const { rightId, userId: connectId, generation: sequence, state, timeInterval, clockId } = right;
  return { rightId, connectId, sequence, state, timeInterval, graceEnds: graceEndsOf(right), clockId };
}

/** When its grace ends, as the API shows it; null without a grace. */
const graceEndsOf = (right: RightEntity): string | null =>
  right.grace === null ? null : right.expiresAt.toISOString().replace('.000Z', 'Z');

/** The right as the API returns it, with the links of docs/api.md "href and links". */
export function representation(right: RightEntity, publicBaseUrl: string, now: Date): Right {
  const user = `${publicBaseUrl}/id/users/${encodeURIComponent(right.userId)}`;
  const self = `${user}/rights/${right.rightId}`;
  const link = (rel: string, href: string, type: string | null = null): Link => ({ rel, href, type, idref: null });
  const links = [
    link('self', self),
    link('user', user),
    link('use', `${self}/usage`),
    link('suspend', `${self}/suspend`, 'action'),
  ];
  if (right.subscriptionId) links.push(link('subscription', `${user}/subs/${right.subscriptionId}`));
  return {
    rightId: right.rightId,
    generation: String(right.generation),
    href: self,
    state: right.state,
    userId: right.userId,
    link: links,
    grantorId: right.grantorId,
    grantorContext: right.grantorContext,
    serviceProviderId: right.serviceProviderId,
    timeInterval: right.timeInterval,
    sku: right.sku,
    payload: right.payload ?? null,
    used: right.used,
    active: isActive(right, now),
    quantity: right.quantity,
    remaining: right.remaining,
    grace: right.grace,
    inGrace: isInGrace(right, now),
    graceEnds: graceEndsOf(right),
    clockId: right.clockId,
  };
}

/** What the gateway's entitlement projection knows of a right (docs/api.md, docs/decisions/0034). Pure. */
export function projectedOf(right: RightEntity, removed: boolean): ProjectedRight {
  return {
    rightId: right.rightId,
    connectId: right.userId,
    sequence: right.generation,
    state: right.state,
    timeInterval: right.timeInterval,
    grantorId: right.grantorId,
    serviceProviderId: right.serviceProviderId,
    sku: right.sku,
    used: right.used,
    quantity: right.quantity,
    // A check asks what may be consumed now: the units left less those held (docs/api.md).
    remaining: availableOf(right),
    graceEnds: graceEndsOf(right),
    clockId: right.clockId,
    removed,
  };
}
