import { SubscriptionEventTypes, type IssuedRight, type SubscriptionEventType } from '@rs/contracts';
import {
  formatDateTime,
  parseDuration,
  periodExists,
  periodIndexAt,
  periodStart,
  subscriptionEnd,
  type TimeSpec,
} from '@rs/time';
import { DateTime } from 'luxon';
import type { SubscriptionEntity } from './subscription';

export interface PeriodIssue {
  period: number;
  periodStart: string;
  /** When the period fell due: its start, or the subscription's creation if that was later. */
  dueAt: string;
  rights: IssuedRight[];
}

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
 * subscription is; a right that would already have ended is never issued (so catching up
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
    const start = periodStart(spec, k);
    const periodEnd = periodStart(spec, k + 1);
    const rights: IssuedRight[] = [];
    subscription.rightsSpec.forEach((template, templateIndex) => {
      const length = template.timeSpec ? parseDuration(template.timeSpec) : null;
      const end = length?.ok ? start.plus(length.value) : periodEnd;
      if (end.toMillis() <= now.getTime()) {
        if (end.toMillis() > subscription.createdAt.getTime()) missed += 1;
        return;
      }
      rights.push({
        templateIndex,
        sku: template.sku,
        serviceProviderId: template.serviceProviderId,
        grantorContext: template.grantorContext,
        timeInterval: `${formatDateTime(start)}/${formatDateTime(end)}`,
        state: subscription.state === 'ACTIVE' ? 'ACTIVE' : 'SUSPENDED',
        quantity: template.quantity,
        grace: template.grace ?? null,
      });
    });
    const dueAt = DateTime.max(start, DateTime.fromJSDate(subscription.createdAt, { zone: 'utc' }));
    if (rights.length > 0)
      issues.push({ period: k, periodStart: formatDateTime(start), dueAt: dueAt.toISO()!, rights });
    k += 1;
  }
  const nextPeriod = k !== null && periodExists(spec, k) ? k : null;
  const end = subscriptionEnd(spec);
  return { issues, nextPeriod, expired: end !== null && end.toMillis() <= now.getTime(), missed };
}

/**
 * What renewing by `plan` makes of the subscription (docs/api.md "Renewal"): its next period,
 * EXPIRED when the spec has ended, the next generation, and the events that say so
 * (`subscription.renewed` when it issues rights, `subscription.expired`); null when it is up
 * to date.
 */
export function renewedState(
  subscription: SubscriptionEntity,
  plan: RenewalPlan,
  now: Date,
): { next: SubscriptionEntity; events: SubscriptionEventType[] } | null {
  if (plan.nextPeriod === subscription.nextPeriod && !plan.expired && plan.issues.length === 0) return null;
  const next: SubscriptionEntity = {
    ...subscription,
    nextPeriod: plan.nextPeriod,
    state: plan.expired ? 'EXPIRED' : subscription.state,
    generation: subscription.generation + 1,
    updatedAt: now,
  };
  const events: SubscriptionEventType[] = [];
  if (plan.issues.length > 0) events.push(SubscriptionEventTypes.renewed);
  if (plan.expired) events.push(SubscriptionEventTypes.expired);
  return { next, events };
}
