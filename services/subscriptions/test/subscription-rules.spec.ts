import { describe, expect, it } from 'vitest';
import { planRenewal } from '../src/domain/renewal';
import { decide, firstPeriodToIssue, representation, type SubscriptionEntity } from '../src/domain/subscription';
import { aSubscription, aTemplate, specOf } from './subscription-fixture';

const spec = specOf;
const subscription = aSubscription;
const at = (iso: string) => new Date(iso);

describe('docs/api.md "Renewal": planRenewal', () => {
  it('when a period has started, then it yields one right per template, lasting one period, in the offset of the spec', () => {
    const s = subscription({
      rightsSpec: [
        { sku: 'news', serviceProviderId: null, timeSpec: null, grantorContext: null, quantity: null, grace: null },
        { sku: 'video', serviceProviderId: 'SP', timeSpec: 'PT2H', grantorContext: 'ctx', quantity: null, grace: null },
      ],
    });
    const plan = planRenewal(s, spec(s.timeSpec), at('2026-03-01T00:00:05+01:00'));
    expect(plan).toEqual({
      issues: [
        {
          period: 0,
          periodStart: '2026-03-01T00:00:00+01:00',
          plan: 0,
          dueAt: '2026-03-01T00:00:00.000+01:00',
          rights: [
            expect.objectContaining({
              templateIndex: 0,
              sku: 'news',
              timeInterval: '2026-03-01T00:00:00+01:00/2026-03-02T00:00:00+01:00',
              state: 'ACTIVE',
            }),
            expect.objectContaining({
              templateIndex: 1,
              sku: 'video',
              serviceProviderId: 'SP',
              grantorContext: 'ctx',
              timeInterval: '2026-03-01T00:00:00+01:00/2026-03-01T02:00:00+01:00',
            }),
          ],
        },
      ],
      nextPeriod: 1,
      expired: false,
      missed: 0,
    });
  });

  it('when the subscription was created after its period began, then the period fell due at its creation (renewal lag)', () => {
    const s = subscription({ createdAt: new Date('2026-03-01T06:30:00.250Z') });
    const plan = planRenewal(s, spec(s.timeSpec), at('2026-03-01T06:30:01Z'));
    expect(plan.issues.map((issue) => [issue.periodStart, issue.dueAt])).toEqual([
      ['2026-03-01T00:00:00+01:00', '2026-03-01T06:30:00.250Z'],
    ]);
  });

  it('when the next period has not started, then nothing is issued and nothing changes', () => {
    const s = subscription({ nextPeriod: 1 });
    expect(planRenewal(s, spec(s.timeSpec), at('2026-03-01T12:00:00+01:00'))).toEqual({
      issues: [],
      nextPeriod: 1,
      expired: false,
      missed: 0,
    });
  });

  it('when the subscription is SUSPENDED, then its periods still yield rights, SUSPENDED', () => {
    const s = subscription({ state: 'SUSPENDED' });
    const plan = planRenewal(s, spec(s.timeSpec), at('2026-03-01T00:00:05+01:00'));
    expect(plan.issues[0]!.rights.map((right) => right.state)).toEqual(['SUSPENDED']);
  });

  it('when periods were missed, then only those whose rights have not ended are issued (catch-up)', () => {
    const s = subscription({
      rightsSpec: [
        { sku: 'news', serviceProviderId: null, timeSpec: null, grantorContext: null, quantity: null, grace: null },
        { sku: 'short', serviceProviderId: null, timeSpec: 'PT1H', grantorContext: null, quantity: null, grace: null },
      ],
    });
    const plan = planRenewal(s, spec(s.timeSpec), at('2026-03-02T00:30:00+01:00'));
    // Period 0 ended at the start of period 1; period 1's one-hour right has not ended yet.
    expect(plan.issues.map((issue) => [issue.period, issue.rights.map((right) => right.sku)])).toEqual([
      [1, ['news', 'short']],
    ]);
    expect(plan.nextPeriod).toBe(2);
    // Period 0's two rights ended after the subscription was created: renewal was late, they are lost.
    expect(plan.missed).toBe(2);
  });

  it("when renewal comes after a period's right has ended but within its template's grace, then it is still issued (in grace)", () => {
    const s = subscription({ rightsSpec: [aTemplate('news', { grace: 'PT12H' })] });
    // Period 0 ended at 2026-03-02T00:00+01:00; its grace runs until noon.
    const late = planRenewal(s, spec(s.timeSpec), at('2026-03-02T06:00:00+01:00'));
    expect(late.issues.map(({ period }) => period)).toEqual([0, 1]);
    expect(late.missed).toBe(0);
    const tooLate = planRenewal(s, spec(s.timeSpec), at('2026-03-02T12:00:00+01:00'));
    expect([tooLate.issues.map(({ period }) => period), tooLate.missed]).toEqual([[1], 1]);
  });

  it('when a right had ended before the subscription was created, then it is not counted as missed', () => {
    const s = subscription({
      createdAt: new Date('2026-03-01T02:00:00+01:00'),
      rightsSpec: [
        { sku: 'news', serviceProviderId: null, timeSpec: null, grantorContext: null, quantity: null, grace: null },
        { sku: 'short', serviceProviderId: null, timeSpec: 'PT1H', grantorContext: null, quantity: null, grace: null },
      ],
    });
    // Created in period 0 after its one-hour right had ended; renewed late, an hour into period 1.
    const plan = planRenewal(s, spec(s.timeSpec), at('2026-03-02T01:00:00+01:00'));
    expect(plan.issues.map((issue) => [issue.period, issue.rights.map((right) => right.sku)])).toEqual([[1, ['news']]]);
    // Period 0's long right ended after the creation (missed); its short one before (never due);
    // period 1's short right ended before this renewal (missed).
    expect(plan.missed).toBe(2);
  });

  it('when R<n> periods have passed, then the subscription expires and nothing more is issued', () => {
    const s = subscription({ nextPeriod: null });
    expect(planRenewal(s, spec(s.timeSpec), at('2026-03-04T00:00:00+01:00'))).toEqual({
      issues: [],
      nextPeriod: null,
      expired: true,
      missed: 0,
    });
  });

  it('when the end of the spec comes before a period would start, then that period is never issued', () => {
    const s = subscription({
      timeSpec: 'R/2026-03-01T00:00:00Z/2026-03-02T12:00:00Z/P1D',
      origTimeSpec: 'R/2026-03-01T00:00:00Z/P1D',
      nextPeriod: 2,
    });
    const plan = planRenewal(s, spec(s.timeSpec), at('2026-03-03T00:00:00Z'));
    expect(plan.issues).toEqual([]);
    expect(plan.expired).toBe(true);
    expect(plan.nextPeriod).toBeNull();
  });
});

describe('docs/api.md "Renewal": the first period of a new subscription', () => {
  it('when the start lies ahead, then period 0; in the past, the current period; after the end, none', () => {
    const s = spec('R3/2026-03-01T00:00:00Z/P1D');
    expect(firstPeriodToIssue(s, at('2026-02-01T00:00:00Z'))).toBe(0);
    expect(firstPeriodToIssue(s, at('2026-03-02T06:00:00Z'))).toBe(1);
    expect(firstPeriodToIssue(s, at('2026-03-05T00:00:00Z'))).toBeNull();
  });
});

describe('docs/api.md: the subscription state table', () => {
  const now = at('2026-03-01T00:00:00Z');
  it('when an ACTIVE subscription is suspended or a SUSPENDED one activated, then it changes and its rights follow', () => {
    expect(decide(subscription(), 'suspend', now)).toMatchObject({
      kind: 'change',
      next: { state: 'SUSPENDED', generation: 2, updatedAt: now },
      events: ['subscription.suspended'],
      cascade: { action: 'suspend' },
    });
    expect(decide(subscription({ state: 'SUSPENDED' }), 'activate', now)).toMatchObject({
      kind: 'change',
      next: { state: 'ACTIVE' },
      events: ['subscription.activated'],
      cascade: { action: 'activate' },
    });
  });

  it('when it is already in the state asked for, or EXPIRED, then it is a conflict (409)', () => {
    expect(decide(subscription(), 'activate', now)).toMatchObject({ kind: 'conflict' });
    expect(decide(subscription({ state: 'SUSPENDED' }), 'suspend', now)).toMatchObject({ kind: 'conflict' });
    for (const command of ['activate', 'suspend'] as const)
      expect(decide(subscription({ state: 'EXPIRED' }), command, now)).toMatchObject({
        kind: 'conflict',
        reason: 'subscription S1 has expired',
      });
  });
});

describe('docs/api.md "href and links": the representation', () => {
  it('when ACTIVE, SUSPENDED or EXPIRED, then the one action link is suspend, activate or none', () => {
    const actions = (state: SubscriptionEntity['state']) =>
      representation(subscription({ state }), 'https://api.example.com')
        .link.filter((link) => link.type === 'action')
        .map((link) => [link.rel, link.href]);
    expect(actions('ACTIVE')).toEqual([['suspend', 'https://api.example.com/id/users/frank/subs/S1/suspend']]);
    expect(actions('SUSPENDED')).toEqual([['activate', 'https://api.example.com/id/users/frank/subs/S1/activate']]);
    expect(actions('EXPIRED')).toEqual([]);
  });

  it('then the generation is a decimal string and origTimeSpec is what the client wrote', () => {
    const view = representation(subscription({ generation: 7 }), 'https://api.example.com');
    expect(view).toMatchObject({ generation: '7', origTimeSpec: 'R3/2026-03-01T00:00:00+01:00/P1D', userId: 'frank' });
  });
});
