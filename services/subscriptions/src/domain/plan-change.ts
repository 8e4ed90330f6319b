import { SubscriptionEventTypes } from '@rs/contracts';
import { periodRightId } from '@rs/hashing';
import { formatDateTime, periodExists, periodIndexAt, periodStart, type TimeSpec } from '@rs/time';
import { DateTime } from 'luxon';
import { restOfPeriod } from './renewal';
import type { Decision, SubscriptionEntity, Template } from './subscription';

export type PlanChangeAt = 'now' | 'next-period';

/**
 * docs/api.md "Plan changes": the subscription with `templates` from now on, or from the next
 * period's start. Pure; the templates were validated as at creation.
 *
 * `now`: the templates change at the change's instant (whole seconds, written with the time
 * spec's offset). When the current period's rights have been issued, those of the old templates
 * end then (a `rights.cascade` `end` naming their ids, which derive from the period and the plan,
 * so nothing else is touched) and the new templates' rights run for the rest of the period,
 * under the next plan's ids. When they have not (its renewal is still to come), renewal issues
 * the whole period from the new templates. Either way no period gets both plans' rights.
 *
 * `next-period`: pending until the next period's start, where renewal takes it up; a change
 * replaces a pending one. A subscription with no next period has nothing to change then (409).
 */
export function changePlan(
  subscription: SubscriptionEntity,
  spec: TimeSpec,
  templates: Template[],
  at: PlanChangeAt,
  now: Date,
): Decision {
  if (subscription.state === 'EXPIRED')
    return { kind: 'conflict', reason: `subscription ${subscription.subscriptionId} has expired` };
  const instant = DateTime.fromMillis(Math.floor(now.getTime() / 1000) * 1000).setZone(spec.start.zone);
  const current = periodIndexAt(spec, instant);
  const changed = { generation: subscription.generation + 1, updatedAt: now };
  if (at === 'next-period') {
    const from = Math.max(current + 1, subscription.nextPeriod ?? current + 1);
    if (!periodExists(spec, from))
      return { kind: 'conflict', reason: `subscription ${subscription.subscriptionId} has no next period` };
    const pendingChange = { rightsSpec: templates, effectiveAt: formatDateTime(periodStart(spec, from)) };
    return {
      kind: 'change',
      next: { ...subscription, ...changed, pendingChange },
      events: [SubscriptionEventTypes.changed],
      cascade: null,
    };
  }
  const next: SubscriptionEntity = {
    ...subscription,
    ...changed,
    rightsSpec: templates,
    plan: subscription.plan + 1,
    pendingChange: null,
  };
  const issued = periodExists(spec, current) && (subscription.nextPeriod === null || subscription.nextPeriod > current);
  if (!issued) return { kind: 'change', next, events: [SubscriptionEventTypes.changed], cascade: null };
  const start = formatDateTime(periodStart(spec, current));
  const rightIds = subscription.rightsSpec.map((_, index) =>
    periodRightId(subscription.subscriptionId, start, index, subscription.plan),
  );
  const rest = restOfPeriod(next, spec, current, instant);
  return {
    kind: 'change',
    next,
    events: [SubscriptionEventTypes.changed],
    cascade: { action: 'end', rightIds, at: formatDateTime(instant) },
    issues: rest ? [rest] : [],
  };
}

/** docs/api.md "Plan changes": `DELETE …/change` withdraws a pending change; without one, nothing changes. */
export function withdrawChange(subscription: SubscriptionEntity, now: Date): Decision {
  if (!subscription.pendingChange) return { kind: 'unchanged' };
  return {
    kind: 'change',
    next: { ...subscription, pendingChange: null, generation: subscription.generation + 1, updatedAt: now },
    events: [SubscriptionEventTypes.changed],
    cascade: null,
  };
}
