import {
  RightEventTypes,
  type ExpiryEntry,
  type Link,
  type ProjectedRight,
  type Right,
  type RightEventType,
  type RightState,
  type Decision as ChangeDecision,
} from '@rs/contracts';
import { instantAfter } from '@rs/time';

/** Units held on a right for a consumption under way or a reservation, until `until` (docs/decisions/0045). */
export interface Hold {
  id: string;
  amount: number;
  until: Date;
}

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

/** What a command does to a right (docs/api.md "Rights"). */
export type Decision = ChangeDecision<{
  next: RightEntity;
  events: RightEventType[];
  removes?: true;
  /** The units the change took from a metered right (its `right.consumed` says so). */
  consumed?: number;
  /** The units an adjustment added (its `right.adjusted` says so). */
  adjusted?: number;
}>;

export const conflict = (reason: string): Decision => ({ kind: 'conflict', reason });

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

/** `right` with `patch` at its next generation, changed at `now`, with `events`. */
export function changed(
  right: RightEntity,
  patch: Partial<RightEntity>,
  events: RightEventType[],
  now: Date,
): Decision {
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

/** What a new right is made of: everything else follows from it (docs/api.md "Rights"). */
export type NewRight = Pick<
  RightEntity,
  | 'rightId'
  | 'userId'
  | 'state'
  | 'grantorId'
  | 'grantorContext'
  | 'serviceProviderId'
  | 'sku'
  | 'payload'
  | 'quantity'
  | 'grace'
  | 'subscriptionId'
  | 'clockId'
> & { interval: { start: Date; end: Date; text: string } };

/** A right made at `now`, at its first generation: not used yet, all its units left, none held. */
export function newRight(made: NewRight, now: Date): RightEntity {
  const { interval, ...fields } = made;
  return {
    ...fields,
    used: false,
    remaining: made.quantity,
    holds: [],
    start: interval.start,
    end: interval.end,
    expiresAt: expiryOf(interval.end, made.grace),
    timeInterval: interval.text,
    generation: 1,
    createdAt: now,
    updatedAt: now,
  };
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
  return newRight(
    {
      ...target,
      state: 'EXPIRED',
      grantorId: '',
      grantorContext: null,
      serviceProviderId: null,
      sku: '',
      payload: null,
      quantity: null,
      grace: null,
      clockId: null,
      interval: { start: at, end: at, text: `${instant}/${instant}` },
    },
    now,
  );
}

/** docs/api.md "Rights": its grantor removes it whatever its state; right.removed. */
export function removal(right: RightEntity, now: Date): Decision {
  const next = { ...right, generation: right.generation + 1, updatedAt: now };
  return { kind: 'change', next, events: [RightEventTypes.removed], removes: true };
}

/** The units held for consumptions and reservations under way: not consumed, not available to others. */
export const heldUnits = (holds: readonly Hold[]): number => holds.reduce((sum, hold) => sum + hold.amount, 0);

/** The units anyone may take from a right now (what is left less what is held); null for a plain right. */
export function availableOf(right: Pick<RightEntity, 'remaining' | 'holds'>): number | null {
  return right.remaining === null ? null : right.remaining - heldUnits(right.holds);
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
