import { periodRightId } from '@rs/hashing';
import { describe, expect, it } from 'vitest';
import { changePlan, withdrawChange } from '../src/domain/plan-change';
import { planRenewal, renewedState } from '../src/domain/renewal';
import type { SubscriptionEntity } from '../src/domain/subscription';
import { latestOf, planAsOf, progressOf } from '../src/store/progress-records';
import { aSubscription, aTemplate, specOf } from './subscription-fixture';

const template = aTemplate;
const TIME_SPEC = 'R6/2026-03-01T00:00:00+01:00/P1M';
const spec = specOf(TIME_SPEC);
/** In its second period (April), whose rights were issued. */
const subscription = (fields: Partial<SubscriptionEntity> = {}): SubscriptionEntity =>
  aSubscription({
    rightsSpec: [template('basic')],
    timeSpec: TIME_SPEC,
    origTimeSpec: TIME_SPEC,
    nextPeriod: 2,
    generation: 3,
    updatedAt: new Date('2026-04-01T00:00:00Z'),
    ...fields,
  });
const MID_APRIL = new Date('2026-04-15T10:20:30.400Z');
const change = (s: SubscriptionEntity, at: 'now' | 'next-period', now = MID_APRIL) => {
  const decision = changePlan(s, spec, [template('premium', { quantity: 10 })], at, now);
  if (decision.kind !== 'change') throw new Error(`expected a change, got ${decision.kind}`);
  return decision;
};

describe('docs/api.md "Plan changes": now', () => {
  it("when the current period's rights were issued, then the old template's right ends at the change's second and the new one runs from it to the period's end, under the next plan's ids", () => {
    const decision = change(subscription(), 'now');
    expect(decision.next).toMatchObject({
      rightsSpec: [{ sku: 'premium' }],
      plan: 1,
      pendingChange: null,
      generation: 4,
    });
    expect(decision.events).toEqual(['subscription.changed']);
    expect(decision.cascade).toEqual({
      action: 'end',
      rightIds: [periodRightId('S1', '2026-04-01T00:00:00+01:00', 0, 0)],
      at: '2026-04-15T11:20:30+01:00',
    });
    expect(decision.issues).toEqual([
      {
        period: 1,
        periodStart: '2026-04-01T00:00:00+01:00',
        plan: 1,
        dueAt: expect.any(String),
        rights: [
          expect.objectContaining({
            templateIndex: 0,
            sku: 'premium',
            quantity: 10,
            timeInterval: '2026-04-15T11:20:30+01:00/2026-05-01T00:00:00+01:00',
            state: 'ACTIVE',
          }),
        ],
      },
    ]);
    // The rights the change issues and those it ends never share an id.
    expect(periodRightId('S1', '2026-04-01T00:00:00+01:00', 0, 1)).not.toBe(
      periodRightId('S1', '2026-04-01T00:00:00+01:00', 0, 0),
    );
  });

  it('when the next periods are renewed, then they issue the new templates only, and a second change in a period ends the rights of the first', () => {
    const changed = change(subscription(), 'now').next;
    const may = planRenewal(changed, spec, new Date('2026-05-01T00:00:01Z'));
    expect(may.issues.map(({ period, plan, rights }) => ({ period, plan, skus: rights.map((r) => r.sku) }))).toEqual([
      { period: 2, plan: 1, skus: ['premium'] },
    ]);
    const again = changePlan(changed, spec, [template('basic')], 'now', new Date('2026-04-20T00:00:00Z'));
    expect(again).toMatchObject({
      next: { plan: 2, rightsSpec: [{ sku: 'basic' }] },
      cascade: { action: 'end', rightIds: [periodRightId('S1', '2026-04-01T00:00:00+01:00', 0, 1)] },
    });
  });

  it("when the current period's renewal is still to come, then nothing ends and nothing is issued now: renewal issues the whole period from the new templates", () => {
    const behind = subscription({ nextPeriod: 1 });
    const decision = change(behind, 'now');
    expect(decision.cascade).toBeNull();
    expect(decision.issues ?? []).toEqual([]);
    const renewal = planRenewal(decision.next, spec, MID_APRIL);
    expect(renewal.issues).toEqual([
      expect.objectContaining({
        period: 1,
        plan: 1,
        rights: [
          expect.objectContaining({
            sku: 'premium',
            timeInterval: '2026-04-01T00:00:00+01:00/2026-05-01T00:00:00+01:00',
          }),
        ],
      }),
    ]);
  });

  it('when the subscription is SUSPENDED, then the new rights are SUSPENDED; when EXPIRED, the change is a conflict (409)', () => {
    expect(change(subscription({ state: 'SUSPENDED' }), 'now').issues?.[0]?.rights[0]?.state).toBe('SUSPENDED');
    expect(changePlan(subscription({ state: 'EXPIRED' }), spec, [template('premium')], 'now', MID_APRIL)).toEqual({
      kind: 'conflict',
      reason: 'subscription S1 has expired',
    });
  });
});

describe('docs/api.md "Plan changes": next-period', () => {
  it("when asked, then the change is pending from the next period's start, and the current plan still renews until then", () => {
    const { next, cascade, events } = change(subscription(), 'next-period');
    expect(next.pendingChange).toEqual({
      rightsSpec: [template('premium', { quantity: 10 })],
      effectiveAt: '2026-05-01T00:00:00+01:00',
    });
    expect([next.rightsSpec.map((t) => t.sku), next.plan, next.generation]).toEqual([['basic'], 0, 4]);
    expect([cascade, events]).toEqual([null, ['subscription.changed']]);
  });

  it("when renewal passes the pending period's start, then that period and later ones issue the new templates and the change takes effect", () => {
    const pending = change(subscription(), 'next-period').next;
    const at = new Date('2026-05-01T00:00:02+01:00');
    const plan = planRenewal(pending, spec, at);
    expect(plan.issues.map(({ period, plan, rights }) => ({ period, plan, sku: rights[0]!.sku }))).toEqual([
      { period: 2, plan: 1, sku: 'premium' },
    ]);
    const renewed = renewedState(pending, spec, plan, at);
    expect(renewed?.events).toEqual(['subscription.renewed', 'subscription.changed']);
    expect(renewed?.next).toMatchObject({
      rightsSpec: [{ sku: 'premium' }],
      plan: 1,
      pendingChange: null,
      nextPeriod: 3,
    });
    // Caught up late: April's right has ended and is never issued; May's comes from the new templates.
    const late = planRenewal({ ...pending, nextPeriod: 1 }, spec, at);
    expect(late.issues.map(({ period, plan }) => ({ period, plan }))).toEqual([{ period: 2, plan: 1 }]);
  });

  it('when renewal has not reached it, then it stays pending; withdrawn, it is gone; with none pending, withdrawing changes nothing', () => {
    const pending = change(subscription(), 'next-period').next;
    const before = new Date('2026-04-30T22:59:59Z');
    expect(renewedState(pending, spec, planRenewal(pending, spec, before), before)).toBeNull();
    expect(withdrawChange(pending, before)).toMatchObject({
      kind: 'change',
      next: { pendingChange: null, generation: 5 },
      events: ['subscription.changed'],
    });
    expect(withdrawChange(subscription(), before)).toEqual({ kind: 'unchanged' });
  });

  it('when the subscription is in its last period, then there is no next period to change (409)', () => {
    const last = subscription({ nextPeriod: null });
    expect(changePlan(last, spec, [template('premium')], 'next-period', new Date('2026-08-10T00:00:00Z'))).toEqual({
      kind: 'conflict',
      reason: 'subscription S1 has no next period',
    });
  });
});

describe('docs/decisions/0047: the plan on the records of changes', () => {
  it("when only some records carry a plan, then a subscription's plan is the latest of them, as of any generation, whatever compaction copied", () => {
    const created = subscription({ generation: 1 });
    const first = change(created, 'now').next; // generation 2, plan 1
    const renewed = { ...first, generation: 3, nextPeriod: 3 };
    const records = [progressOf(created, first, false), progressOf(first, renewed, false)];
    expect(records[0]!.planned).toMatchObject({ plan: 1 });
    expect(records[1]!.planned).toBeUndefined();
    expect(latestOf(created, false, records).entity).toMatchObject({ generation: 3, plan: 1, nextPeriod: 3 });
    // A document compacted to generation 3 still holds its creation's plan: the records hold the rest.
    expect(latestOf({ ...created, generation: 3 }, false, records).entity).toMatchObject({ plan: 1 });
    expect(planAsOf(created, records, 1)).toMatchObject({ plan: 0, rightsSpec: [{ sku: 'basic' }] });
  });
});
