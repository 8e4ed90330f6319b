import { storableText, TIME_SPEC_PATTERN } from './formats';
import { z } from 'zod';
import { eventFamily } from './cloud-event';
import { PartyId, SkuName } from './catalog';
import { ClockId } from './clocks';
import { ConnectId } from './identity';
import { Grace, Link, Quantity, RightId } from './rights';

/** docs/api.md */
export const SubscriptionState = z.enum(['ACTIVE', 'SUSPENDED', 'EXPIRED']);
export type SubscriptionState = z.infer<typeof SubscriptionState>;

export const SubscriptionId = z.string().regex(/^[0-9A-Za-z]{1,64}$/, 'must be 1-64 letters or digits');

/** docs/api.md: one right per template at every renewal. */
export const RightTemplate = z.strictObject({
  sku: SkuName,
  serviceProviderId: PartyId.nullable().optional(),
  /** An ISO 8601 duration: the length of the rights; without it a right lasts one period. */
  timeSpec: z.string().max(64).nullable().optional(),
  grantorContext: storableText(1024).nullable().optional(),
  /** Units each period's right grants: a fresh allowance every period. */
  quantity: Quantity.nullable().optional(),
  /** How long each period's right stays usable after its interval (docs/api.md "Grace"). */
  grace: Grace.nullable().optional(),
});
export type RightTemplate = z.infer<typeof RightTemplate>;

/** Body of `POST /id/users/{connectId}/subs` (docs/api.md). */
export const SubscriptionCreateBody = z.strictObject({
  grantorId: PartyId,
  // The pattern documents the syntax; libs/time parses it, with a precise reason when it fails.
  timeSpec: z.string().min(1).max(200).meta({ pattern: TIME_SPEC_PATTERN }),
  rightsSpec: z.array(RightTemplate).min(1, 'must hold at least one template').max(20),
  state: z.enum(['ACTIVE', 'SUSPENDED'], { error: 'must be ACTIVE or SUSPENDED' }).optional(),
  /** Accepted and stored as an opaque string (docs/api.md: meaning not shown). */
  paymentAgreement: storableText(4096).optional(),
  grantorContext: storableText(1024).nullable().optional(),
  /** docs/decisions/0048: a clock of the subscription's grantor, whose time it and its rights live on. */
  clockId: ClockId.optional(),
});
export type SubscriptionCreateBody = z.infer<typeof SubscriptionCreateBody>;

/** Body of `POST /id/users/{connectId}/subs/{subscriptionId}/change` (docs/api.md "Plan changes"). */
export const PlanChangeBody = z.strictObject({
  rightsSpec: SubscriptionCreateBody.shape.rightsSpec,
  /** `now`: the current period's rights end now, the new ones run for the rest of it; `next-period`: from the next period's start. */
  at: z.enum(['now', 'next-period'], { error: 'must be now or next-period' }),
});
export type PlanChangeBody = z.infer<typeof PlanChangeBody>;

const TemplateView = z.object({
  sku: z.string(),
  serviceProviderId: z.string().nullable(),
  timeSpec: z.string().nullable(),
  grantorContext: z.string().nullable(),
  quantity: z.number().int().nullable(),
  grace: z.string().nullable(),
});

/** A change of templates waiting for the next period (docs/api.md "Plan changes"). */
export const PendingChange = z.object({
  rightsSpec: z.array(TemplateView),
  /** The start of the period from which the new templates apply. */
  effectiveAt: z.iso.datetime({ offset: true }),
});
export type PendingChange = z.infer<typeof PendingChange>;

/** A subscription as the API returns it (docs/api.md). */
export const Subscription = z.object({
  subscriptionId: SubscriptionId,
  href: z.string(),
  generation: z.string(),
  state: SubscriptionState,
  userId: ConnectId,
  link: z.array(Link),
  grantorId: z.string(),
  grantorContext: z.string().nullable(),
  rightsSpec: z.array(TemplateView),
  origTimeSpec: z.string(),
  /** A plan change waiting for the next period, or null (docs/api.md "Plan changes"). */
  pendingChange: PendingChange.nullable(),
  /** docs/decisions/0048: the test clock it lives on, or null for real time. */
  clockId: z.string().nullable(),
});
export type Subscription = z.infer<typeof Subscription>;

export const SubscriptionList = z.object({ subscription: z.array(Subscription) });

/**
 * `data` of every subscription event: the subscription as the API returns it, its user,
 * its generation, and what the scheduler needs to keep its schedule: the full time spec
 * and the next period still to issue.
 */
export const SubscriptionEventData = Subscription.extend({
  connectId: ConnectId,
  sequence: z.number().int().positive(),
  timeSpec: z.string(),
  nextPeriod: z.number().int().min(0).nullable(),
  /** When it was created. */
  createdAt: z.iso.datetime({ offset: true }),
  /**
   * How many plan changes it has had (docs/api.md "Plan changes"): the ids of the rights it
   * issues follow it. Absent from events sent before plans could change: 0.
   */
  plan: z.number().int().min(0).optional(),
  /**
   * `subscription.renewed`, and `subscription.changed` by a change `now`: the ids of the rights
   * it issued (their `right.created` follow). Absent on other events.
   */
  issuedRights: z.array(RightId).max(2_000).optional(),
});
export type SubscriptionEventData = z.infer<typeof SubscriptionEventData>;

export const SubscriptionEventTypes = {
  created: 'subscription.created',
  activated: 'subscription.activated',
  suspended: 'subscription.suspended',
  renewed: 'subscription.renewed',
  expired: 'subscription.expired',
  deleted: 'subscription.deleted',
  changed: 'subscription.changed',
} as const;
export type SubscriptionEventType = (typeof SubscriptionEventTypes)[keyof typeof SubscriptionEventTypes];

export const SubscriptionEvents = eventFamily(SubscriptionEventTypes, SubscriptionEventData);

/**
 * A subscription as of one generation (`sequence`), as much as renewing it needs: the
 * scheduler keeps it from the subscription's last event and sends it with `subscriptions.renew`,
 * so that renewal reads nothing (docs/decisions/0026). Renewal stores its progress only if the
 * subscription is still at that generation.
 */
export const SubscriptionSnapshot = SubscriptionEventData.pick({
  sequence: true,
  state: true,
  grantorId: true,
  grantorContext: true,
  rightsSpec: true,
  origTimeSpec: true,
  timeSpec: true,
  nextPeriod: true,
  plan: true,
}).extend({
  /** Absent from snapshots kept before test clocks: real time. */
  clockId: z.string().nullable().optional(),
  createdAt: z.iso.datetime({ offset: true }),
  /** Absent from snapshots kept before plans could change: none pending. */
  pendingChange: PendingChange.nullable().optional(),
});
export type SubscriptionSnapshot = z.infer<typeof SubscriptionSnapshot>;

/** The snapshot an event's data makes, or null when its data does not make one. */
export function snapshotOf(data: SubscriptionEventData): SubscriptionSnapshot | null {
  const snapshot = SubscriptionSnapshot.safeParse(data); // keeps the snapshot's fields only
  return snapshot.success ? snapshot.data : null;
}

/** What the scheduler needs of one subscription to rebuild its schedule (internal, service callers only). */
export const ScheduleEntry = SubscriptionEventData.pick({
  subscriptionId: true,
  connectId: true,
  sequence: true,
  state: true,
  timeSpec: true,
  nextPeriod: true,
}).extend({
  /** Its test clock (docs/decisions/0048); absent or null: real time. */
  clockId: z.string().nullable().optional(),
});
export type ScheduleEntry = z.infer<typeof ScheduleEntry>;
export const SchedulePage = z.object({ items: z.array(ScheduleEntry), next: z.string().nullable() });
export type SchedulePage = z.infer<typeof SchedulePage>;
