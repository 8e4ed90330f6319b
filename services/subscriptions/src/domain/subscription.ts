import {
  SubscriptionEventTypes,
  type IssuedRight,
  type RightTemplate,
  type Link,
  type ScheduleEntry,
  type Subscription,
  type SubscriptionEventType,
  type SubscriptionSnapshot,
  type SubscriptionState,
  type Decision as ChangeDecision,
} from '@rs/contracts';
import { nextPeriodStart, parseTimeSpec, periodExists, periodIndexAt, type TimeSpec } from '@rs/time';
import { DateTime } from 'luxon';

export interface Template {
  sku: string;
  serviceProviderId: string | null;
  timeSpec: string | null;
  grantorContext: string | null;
  /** Units each period's right grants (null: plain rights). */
  quantity: number | null;
  /** How long each period's right stays usable after its interval (docs/api.md "Grace"). */
  grace: string | null;
}

/** A template as the service holds it: what the client left out, null. */
export const templateOf = ({
  sku,
  serviceProviderId = null,
  timeSpec = null,
  grantorContext = null,
  quantity = null,
  grace = null,
}: RightTemplate): Template => ({ sku, serviceProviderId, timeSpec, grantorContext, quantity, grace });

/** The rights one period issues, as a `rights.issue` carries them (docs/api.md "Renewal"). */
export interface PeriodIssue {
  period: number;
  periodStart: string;
  /** The plan changes the templates come from (part of each right's id: docs/api.md "Plan changes"). */
  plan: number;
  /** When the period fell due: its start, or the subscription's creation if that was later. */
  dueAt: string;
  rights: IssuedRight[];
}

/** Templates that take over from a period's start (docs/api.md "Plan changes"). */
export interface PendingPlan {
  rightsSpec: Template[];
  /** The start of that period, as its time spec writes it. */
  effectiveAt: string;
}

/** A subscription as the service holds it (docs/api.md), free of storage details. */
export interface SubscriptionEntity {
  subscriptionId: string;
  userId: string;
  grantorId: string;
  grantorContext: string | null;
  state: SubscriptionState;
  rightsSpec: Template[];
  /** How many plan changes have taken effect (docs/api.md "Plan changes"); the ids of its rights follow it. */
  plan: number;
  /** A plan change waiting for the next period, or null. */
  pendingChange: PendingPlan | null;
  /** The time spec as the client sent it (the API shows origTimeSpec). */
  timeSpec: string;
  origTimeSpec: string;
  paymentAgreement: string | null;
  /** The next period whose rights are still to be issued; null when none is left. */
  nextPeriod: number | null;
  /** docs/decisions/0048: the test clock it and its rights live on (every "now" of it is that clock's time), or null. */
  clockId: string | null;
  generation: number;
  createdAt: Date;
  updatedAt: Date;
}

export type SubscriptionCommand = 'activate' | 'suspend';

/**
 * What a change does to the subscription's rights (a `rights.cascade`): suspend or reactivate
 * them, or end those a plan change replaced at its instant `at`.
 */
export type RightsCascade = { action: SubscriptionCommand } | { action: 'end'; rightIds: string[]; at: string };

/** docs/api.md: activate from SUSPENDED, suspend from ACTIVE; anything else is 409. */
export const TRANSITIONS: Record<SubscriptionState, Partial<Record<SubscriptionCommand, SubscriptionState>>> = {
  ACTIVE: { suspend: 'SUSPENDED' },
  SUSPENDED: { activate: 'ACTIVE' },
  EXPIRED: {},
};

const EVENT_OF: Record<SubscriptionCommand, SubscriptionEventType> = {
  activate: SubscriptionEventTypes.activated,
  suspend: SubscriptionEventTypes.suspended,
};

/** What a command does to a subscription (docs/api.md "Subscriptions"). */
export type Decision = ChangeDecision<{
  next: SubscriptionEntity;
  events: SubscriptionEventType[];
  cascade: RightsCascade | null;
  /** Rights to issue with the change (a plan change `now`: the rest of the current period). */
  issues?: PeriodIssue[];
  removes?: true;
}>;

/** docs/api.md "Subscriptions": subscription.deleted; its rights stay (docs/api.md). */
export function removal(subscription: SubscriptionEntity, now: Date): Decision {
  const next = { ...subscription, generation: subscription.generation + 1, updatedAt: now };
  return { kind: 'change', next, events: [SubscriptionEventTypes.deleted], cascade: null, removes: true };
}

/** Activate or suspend; the subscription's rights follow (docs/api.md, the cascade). */
export function decide(subscription: SubscriptionEntity, command: SubscriptionCommand, now: Date): Decision {
  const target = TRANSITIONS[subscription.state][command];
  if (!target) {
    const why = subscription.state === 'EXPIRED' ? 'has expired' : `is already ${subscription.state}`;
    return { kind: 'conflict', reason: `subscription ${subscription.subscriptionId} ${why}` };
  }
  return {
    kind: 'change',
    next: { ...subscription, state: target, generation: subscription.generation + 1, updatedAt: now },
    events: [EVENT_OF[command]],
    cascade: { action: command },
  };
}

export function timeSpecOf(subscription: Pick<SubscriptionEntity, 'timeSpec'>): TimeSpec {
  const parsed = parseTimeSpec(subscription.timeSpec);
  if (!parsed.ok) throw new Error(`stored time spec does not parse: ${parsed.reason}`);
  return parsed.value;
}

/**
 * The first period to issue for a new subscription (docs/api.md "Renewal"): period 0 when
 * it starts in the future; when the start lies in the past, the current period (issued at
 * once); null when the subscription has already ended.
 */
export function firstPeriodToIssue(spec: TimeSpec, now: Date): number | null {
  const k = Math.max(0, periodIndexAt(spec, DateTime.fromJSDate(now)));
  return periodExists(spec, k) ? k : (nextPeriodStart(spec, DateTime.fromJSDate(now))?.k ?? null);
}

/** A subscription as the scheduler rebuilds its schedule from it (the internal listing, docs/api.md "Renewal"). */
export function scheduleEntry(subscription: SubscriptionEntity): ScheduleEntry {
  const {
    subscriptionId,
    userId: connectId,
    generation: sequence,
    state,
    timeSpec,
    nextPeriod,
    clockId,
  } = subscription;
  return { subscriptionId, connectId, sequence, state, timeSpec, nextPeriod, clockId };
}

/** The subscription as the API returns it, with the links of docs/architecture.md. */
export function representation(subscription: SubscriptionEntity, publicBaseUrl: string): Subscription {
  const user = `${publicBaseUrl}/id/users/${encodeURIComponent(subscription.userId)}`;
  const self = `${user}/subs/${subscription.subscriptionId}`;
  const link = (rel: string, href: string, type: string | null = null): Link => ({ rel, href, type, idref: null });
  const links = [link('self', self), link('user', user)];
  if (subscription.state === 'ACTIVE') links.push(link('suspend', `${self}/suspend`, 'action'));
  if (subscription.state === 'SUSPENDED') links.push(link('activate', `${self}/activate`, 'action'));
  return {
    subscriptionId: subscription.subscriptionId,
    href: self,
    generation: String(subscription.generation),
    state: subscription.state,
    userId: subscription.userId,
    link: links,
    grantorId: subscription.grantorId,
    grantorContext: subscription.grantorContext,
    rightsSpec: subscription.rightsSpec,
    origTimeSpec: subscription.origTimeSpec,
    pendingChange: subscription.pendingChange,
    clockId: subscription.clockId,
  };
}

/**
 * The subscription a scheduler's snapshot describes (docs/decisions/0026), as renewal plans
 * from it. Its payment agreement is in no snapshot and in no message renewal sends: it stays
 * unknown here, and is never stored from here.
 */
export function fromSnapshot(
  subscriptionId: string,
  userId: string,
  snapshot: SubscriptionSnapshot,
): SubscriptionEntity {
  const createdAt = new Date(snapshot.createdAt);
  return {
    subscriptionId,
    userId,
    grantorId: snapshot.grantorId,
    grantorContext: snapshot.grantorContext,
    state: snapshot.state,
    rightsSpec: snapshot.rightsSpec,
    plan: snapshot.plan ?? 0,
    pendingChange: snapshot.pendingChange ?? null,
    timeSpec: snapshot.timeSpec,
    origTimeSpec: snapshot.origTimeSpec,
    paymentAgreement: null,
    nextPeriod: snapshot.nextPeriod,
    clockId: snapshot.clockId ?? null,
    generation: snapshot.sequence,
    createdAt,
    updatedAt: createdAt,
  };
}
