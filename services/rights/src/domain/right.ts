import {
  RightEventTypes,
  type ExpiryEntry,
  type Link,
  type ProjectedRight,
  type Right,
  type RightEventType,
  type RightState,
} from '@rs/contracts';
import { consume } from './metering';

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
  /** Ids of the consumptions applied lately (docs/decisions/0045); not part of its representation. */
  applied: readonly string[];
  start: Date;
  end: Date;
  timeInterval: string;
  subscriptionId: string | null;
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
  /** `consumed`: the units the change took from a metered right (its `right.consumed` says so). */
  | { kind: 'change'; next: RightEntity; events: RightEventType[]; removes?: true; consumed?: number }
  | { kind: 'unchanged' }
  | { kind: 'conflict'; reason: string };

const conflict = (reason: string): Decision => ({ kind: 'conflict', reason });

/** docs/api.md `active`: state ACTIVE and `now` inside [start, end). */
export function isActive(right: RightEntity, now: Date): boolean {
  return right.state === 'ACTIVE' && right.start <= now && now < right.end;
}

export function hasEnded(right: RightEntity, now: Date): boolean {
  return right.end <= now;
}

/**
 * docs/api.md: an ACTIVE or SUSPENDED right whose interval has ended is EXPIRED. That follows
 * from the interval (docs/decisions/0027): read at `now`, such a right is EXPIRED at its next
 * generation, changed when it ended, whether or not its store has written the expiry yet. Pure.
 */
export function asOf(stored: RightEntity, now: Date): RightEntity {
  if ((stored.state !== 'ACTIVE' && stored.state !== 'SUSPENDED') || !hasEnded(stored, now)) return stored;
  return { ...stored, state: 'EXPIRED', generation: stored.generation + 1, updatedAt: stored.end };
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

/** docs/api.md "Rights": its grantor removes it whatever its state; right.removed. */
export function removal(right: RightEntity, now: Date): Decision {
  const next = { ...right, generation: right.generation + 1, updatedAt: now };
  return { kind: 'change', next, events: [RightEventTypes.removed], removes: true };
}

/**
 * docs/api.md "Usage": allowed only while active; the first use sets `used` (never
 * cleared) and emits right.used, plus service.announce when the catalog asks for it. A
 * metered right gives `consumption.amount` of its units (or refuses, taking none), each time
 * with right.consumed; a consumption applied before (its id remembered) changes nothing.
 */
export function recordUsage(
  right: RightEntity,
  now: Date,
  announce: boolean,
  consumption: { id: string; amount: number },
): Decision {
  if (!isActive(right, now)) return conflict(`right ${right.rightId} is not active`);
  const firstUse: RightEventType[] = right.used
    ? []
    : [RightEventTypes.used, ...(announce ? [RightEventTypes.serviceAnnounce] : [])];
  if (right.quantity === null || right.remaining === null) {
    // A plain right: used once, for good; a repeat changes nothing (the contract's usage).
    return firstUse.length === 0 ? { kind: 'unchanged' } : changed(right, { used: true }, firstUse, now);
  }
  const meter = { quantity: right.quantity, remaining: right.remaining, holds: [], applied: right.applied };
  const taken = consume(meter, consumption.id, consumption.amount);
  if (taken.kind === 'already') return { kind: 'unchanged' };
  if (taken.kind === 'short')
    return conflict(`remaining: right ${right.rightId} has ${taken.available} units, ${consumption.amount} asked`);
  const { remaining, applied } = taken.next;
  return {
    kind: 'change',
    next: { ...right, used: true, remaining, applied, generation: right.generation + 1, updatedAt: now },
    events: [...firstUse, RightEventTypes.consumed],
    consumed: consumption.amount,
  };
}

/** A right as the scheduler rebuilds its expiries from it (the internal listing, docs/decisions/0009). */
export function expiryEntry(right: RightEntity): ExpiryEntry {
  const { rightId, userId: connectId, generation: sequence, state, timeInterval } = right;
  return { rightId, connectId, sequence, state, timeInterval };
}

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
    remaining: right.remaining,
    removed,
  };
}
