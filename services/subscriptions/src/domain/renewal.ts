import { SubscriptionEventTypes, type IssuedRight, type SubscriptionEventType } from '@rs/contracts';
import {
  formatDateTime,
  instantAfter,
  parseDuration,
  periodExists,
  periodIndexAt,
  periodStart,
  subscriptionEnd,
  type TimeSpec,
} from '@rs/time';
import { DateTime } from 'luxon';
import type { PeriodIssue, SubscriptionEntity, Template } from './subscription';

export type { PeriodIssue };

export interface RenewalPlan {
  issues: PeriodIssue[];
  nextPeriod: number | null;
  expired: boolean;
  /**
   * Rights never issued because renewal came after they had ended, although they were still
   * to come when the subscription was created: the platform was late, and its user lost
   * them for good (docs/api.md). Those that had ended before the creation are not counted.
   */
  missed: number;
}

/**
 * What bringing a subscription up to `now` means (docs/api.md "Renewal"): every period from
 * `nextPeriod` that has started yields one right per template, ACTIVE or SUSPENDED as the
 * subscription is; a right that would already have ended (its grace too) is never issued (so catching up
 * after downtime issues only what still matters); a right keeps its full length even past
 * the subscription's end; at the end the subscription is EXPIRED. Pure.
 */
export function planRenewal(subscription: SubscriptionEntity, spec: TimeSpec, now: Date): RenewalPlan {
  const at = DateTime.fromJSDate(now);
  const current = periodIndexAt(spec, at);
  const issues: PeriodIssue[] = [];
  let missed = 0;
  let k = subscription.nextPeriod;
  while (k !== null && k <= current && periodExists(spec, k)) {
    const { templates, plan } = planOfPeriod(subscription, spec, k);
    const start = periodStart(spec, k);
    const rights: IssuedRight[] = [];
    templates.forEach((template, templateIndex) => {
      const end = rightEnd(template, spec, k!);
      // A right still in its grace is of use: issued, late as it is (docs/api.md "Grace").
      const usableUntil = template.grace
        ? (instantAfter(end.toJSDate(), template.grace) ?? end.toJSDate())
        : end.toJSDate();
      if (usableUntil <= now) {
        if (usableUntil > subscription.createdAt) missed += 1;
        return;
      }
      rights.push(issuedRight(subscription, template, templateIndex, start, end));
    });
    const dueAt = DateTime.max(start, DateTime.fromJSDate(subscription.createdAt, { zone: 'utc' }));
    if (rights.length > 0)
      issues.push({ period: k, periodStart: formatDateTime(start), plan, dueAt: dueAt.toISO()!, rights });
    k += 1;
  }
  const nextPeriod = k !== null && periodExists(spec, k) ? k : null;
  const end = subscriptionEnd(spec);
  return { issues, nextPeriod, expired: end !== null && end.toMillis() <= now.getTime(), missed };
}

/** The period a pending plan change takes effect in (docs/api.md "Plan changes"), or null. */
export function pendingPeriodOf(subscription: SubscriptionEntity, spec: TimeSpec): number | null {
  const pending = subscription.pendingChange;
  return pending ? periodIndexAt(spec, DateTime.fromISO(pending.effectiveAt, { setZone: true })) : null;
}

/** The templates period `k` issues, and the plan they belong to: the pending change's from its period on. */
function planOfPeriod(subscription: SubscriptionEntity, spec: TimeSpec, k: number) {
  const from = pendingPeriodOf(subscription, spec);
  return from !== null && k >= from
    ? { templates: subscription.pendingChange!.rightsSpec, plan: subscription.plan + 1 }
    : { templates: subscription.rightsSpec, plan: subscription.plan };
}

/** Where a template's right for period `k` ends: its own length from the period's start, or the period's end. */
function rightEnd(template: Template, spec: TimeSpec, k: number): DateTime {
  const length = template.timeSpec ? parseDuration(template.timeSpec) : null;
  return length?.ok ? periodStart(spec, k).plus(length.value) : periodStart(spec, k + 1);
}

function issuedRight(
  subscription: SubscriptionEntity,
  template: Template,
  templateIndex: number,
  start: DateTime,
  end: DateTime,
): IssuedRight {
  return {
    templateIndex,
    sku: template.sku,
    serviceProviderId: template.serviceProviderId,
    grantorContext: template.grantorContext,
    timeInterval: `${formatDateTime(start)}/${formatDateTime(end)}`,
    state: subscription.state === 'ACTIVE' ? 'ACTIVE' : 'SUSPENDED',
    quantity: template.quantity,
    grace: template.grace ?? null,
  };
}

/**
 * The rights of a plan change `now` (docs/api.md "Plan changes"): `changed`'s templates for
 * the rest of the current period `k`, from the change's instant `at` to where each would have
 * ended in that period (those over by then issue nothing). Pure.
 */
export function restOfPeriod(changed: SubscriptionEntity, spec: TimeSpec, k: number, at: DateTime): PeriodIssue | null {
  const rights = changed.rightsSpec.flatMap((template, templateIndex) => {
    const end = rightEnd(template, spec, k);
    return end > at ? [issuedRight(changed, template, templateIndex, at.setZone(end.zone), end)] : [];
  });
  if (rights.length === 0) return null;
  return {
    period: k,
    periodStart: formatDateTime(periodStart(spec, k)),
    plan: changed.plan,
    dueAt: at.toISO()!,
    rights,
  };
}

/**
 * What renewing by `plan` makes of the subscription (docs/api.md "Renewal"): its next period,
 * EXPIRED when the spec has ended, the next generation, and the events that say so
 * (`subscription.renewed` when it issues rights, `subscription.expired`); null when it is up
 * to date.
 */
export function renewedState(
  subscription: SubscriptionEntity,
  spec: TimeSpec,
  plan: RenewalPlan,
  now: Date,
): { next: SubscriptionEntity; events: SubscriptionEventType[] } | null {
  if (plan.nextPeriod === subscription.nextPeriod && !plan.expired && plan.issues.length === 0) return null;
  // A pending plan change takes effect once renewal has passed its period's start.
  const from = pendingPeriodOf(subscription, spec);
  const takesEffect = from !== null && (plan.nextPeriod === null || plan.nextPeriod > from);
  const next: SubscriptionEntity = {
    ...subscription,
    ...(takesEffect
      ? { rightsSpec: subscription.pendingChange!.rightsSpec, plan: subscription.plan + 1, pendingChange: null }
      : {}),
    nextPeriod: plan.nextPeriod,
    state: plan.expired ? 'EXPIRED' : subscription.state,
    generation: subscription.generation + 1,
    updatedAt: now,
  };
  const events: SubscriptionEventType[] = [];
  if (plan.issues.length > 0) events.push(SubscriptionEventTypes.renewed);
  // The plan change booked for this period has taken effect (docs/api.md "Plan changes").
  if (takesEffect) events.push(SubscriptionEventTypes.changed);
  if (plan.expired) events.push(SubscriptionEventTypes.expired);
  return { next, events };
}
