import {
  CommandTypes,
  snapshotOf,
  SubscriptionEventTypes,
  type RightsIssueData,
  type SubscriptionCreateBody,
  type SubscriptionEventData,
} from '@rs/contracts';
import type { OutboxEntry } from '@rs/store';
import { basicCaller, fixedCatalog, testDatabase, type TestDatabase } from '@rs/testing';
import { manualClock } from '@rs/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NowFor } from '@rs/http';
import { Renewals } from '../src/app/renewals';
import { SubscriptionUseCases } from '../src/app/subscriptions';
import { SHORTEST_PERIOD } from '../src/domain/bounds';
import { SubscriptionStore } from '../src/store/subscription-store';
import { subscriptionHistory } from '../src/store/subscription-history';

// The middle tier: the renewal use case with its real store on the real database,
// in this process, on a clock the test moves instead of waiting for periods to pass.

const A = basicCaller('A');
const clock = manualClock('2026-03-01T00:00:00Z');
let database: TestDatabase;
let subscriptions: SubscriptionUseCases;
let renewals: Renewals;

beforeAll(async () => {
  database = await testDatabase('renewal_use_cases');
  const store = new SubscriptionStore(database.db);
  await store.ensureIndexes();
  const time = new NowFor(clock);
  const publicBaseUrl = 'https://api.example.com';
  subscriptions = new SubscriptionUseCases({
    store,
    changes: subscriptionHistory(database.db.db!),
    skus: fixedCatalog({ news: {}, video: {} }),
    publicBaseUrl,
    minPeriod: SHORTEST_PERIOD,
    time,
  });
  renewals = new Renewals({ store, publicBaseUrl, time });
});
afterAll(async () => {
  await database?.drop();
});

/** Subscribes frank to A's `rightsSpec` on `timeSpec`, as grantor A. */
const subscribe = (
  timeSpec: string,
  rightsSpec: SubscriptionCreateBody['rightsSpec'],
  more: Partial<SubscriptionCreateBody> = {},
) => subscriptions.create(A, 'frank', { grantorId: 'A', timeSpec, rightsSpec, ...more });

/**
 * What a renewal at the clock's time commands: each period issued, with the states of its
 * rights; its events; how many rights it came too late to issue.
 */
async function renew(
  subscriptionId: string,
): Promise<{ issued: Array<[string, string[]]>; events: string[]; missed: number }> {
  const renewed = await renewals.renew([{ connectId: 'frank', subscriptionId }], clock(), false);
  const emitted: OutboxEntry[] = renewed.emitted;
  expect(renewed.missed.every((one) => one.subscriptionId === subscriptionId && one.connectId === 'frank')).toBe(true);
  const issues = emitted.filter((entry) => entry.event.type === CommandTypes.rightsIssue);
  return {
    issued: issues.map((entry) => {
      const data = entry.event.data as RightsIssueData;
      return [data.periodStart, data.rights.map((right) => `${right.sku}:${right.state}`)];
    }),
    events: emitted.filter((entry) => entry.exchange === 'subscriptions.events').map((entry) => entry.event.type),
    missed: renewed.missed.reduce((sum, one) => sum + one.rights, 0),
  };
}

describe('renewal (docs/api.md "Renewal"), on a pinned clock', () => {
  it('when each period starts, then it is issued once, one right per template; between periods nothing is', async () => {
    clock.set('2026-03-01T00:00:00Z');
    const subscription = await subscribe('R3/2026-03-01T00:00:00Z/P1D', [{ sku: 'news' }, { sku: 'video' }]);
    expect(await renew(subscription.subscriptionId)).toEqual({
      issued: [['2026-03-01T00:00:00Z', ['news:ACTIVE', 'video:ACTIVE']]],
      events: ['subscription.renewed'],
      missed: 0,
    });
    // The same instant again, and later the same day: nothing more.
    expect((await renew(subscription.subscriptionId)).issued).toEqual([]);
    clock.advance(12 * 3_600_000);
    expect((await renew(subscription.subscriptionId)).issued).toEqual([]);
    clock.set('2026-03-02T00:00:00Z');
    expect((await renew(subscription.subscriptionId)).issued).toEqual([
      ['2026-03-02T00:00:00Z', ['news:ACTIVE', 'video:ACTIVE']],
    ]);
    const stored = await subscriptions.get(A, 'frank', subscription.subscriptionId);
    expect(stored).toMatchObject({ state: 'ACTIVE', nextPeriod: 2, generation: 3 });
  });

  it('when a SUSPENDED subscription renews, then its rights are SUSPENDED; at the end of R<n> it expires and issues no more', async () => {
    clock.set('2026-04-01T00:00:00Z');
    const subscription = await subscribe('R2/2026-04-01T00:00:00Z/P1D', [{ sku: 'news' }], { state: 'SUSPENDED' });
    expect((await renew(subscription.subscriptionId)).issued).toEqual([['2026-04-01T00:00:00Z', ['news:SUSPENDED']]]);
    clock.set('2026-04-02T00:00:00Z');
    expect((await renew(subscription.subscriptionId)).issued).toEqual([['2026-04-02T00:00:00Z', ['news:SUSPENDED']]]);
    clock.set('2026-04-03T00:00:00Z');
    expect(await renew(subscription.subscriptionId)).toEqual({
      issued: [],
      events: ['subscription.expired'],
      missed: 0,
    });
    expect(await subscriptions.get(A, 'frank', subscription.subscriptionId)).toMatchObject({
      state: 'EXPIRED',
      nextPeriod: null,
    });
    clock.set('2026-04-10T00:00:00Z');
    expect(await renew(subscription.subscriptionId)).toEqual({ issued: [], events: [], missed: 0 });
  });

  it('when a subscription is created after its start, then the current period is issued at once, never an ended one', async () => {
    clock.set('2026-05-03T06:00:00Z');
    const subscription = await subscribe('R/2026-05-01T00:00:00Z/P1D', [{ sku: 'news' }]);
    expect((await renew(subscription.subscriptionId)).issued).toEqual([['2026-05-03T00:00:00Z', ['news:ACTIVE']]]);
  });

  it('when the scheduler was away for several periods, then renewal catches up with the period that has not ended', async () => {
    clock.set('2026-06-01T00:00:00Z');
    const subscription = await subscribe('R/2026-06-01T00:00:00Z/P1D', [
      { sku: 'news' },
      { sku: 'video', timeSpec: 'P3D' },
    ]);
    expect((await renew(subscription.subscriptionId)).issued).toHaveLength(1);
    clock.set('2026-06-04T12:00:00Z');
    // Periods 1 to 3 started while nobody renewed: only rights that have not ended yet.
    const caughtUp = await renew(subscription.subscriptionId);
    expect(caughtUp.issued).toEqual([
      ['2026-06-02T00:00:00Z', ['video:ACTIVE']],
      ['2026-06-03T00:00:00Z', ['video:ACTIVE']],
      ['2026-06-04T00:00:00Z', ['news:ACTIVE', 'video:ACTIVE']],
    ]);
    // The one-day rights of periods 1 and 2 ended unissued: reported once, not again by a repeat.
    expect(caughtUp.missed).toBe(2);
    expect((await renew(subscription.subscriptionId)).missed).toBe(0);
  });
});

describe('one bad item fails alone (docs/api.md), on a pinned clock', () => {
  it('when a renewal command comes back (a crash before its ack), then the last renewal of each subscription sends its very events and commands again, and renews nothing twice', async () => {
    clock.set('2026-05-01T00:00:00Z');
    const subscription = await subscribe('R5/2026-05-01T00:00:00Z/P1D', [
      { sku: 'news' },
      { sku: 'video', timeSpec: 'PT6H' },
    ]);
    const item = { connectId: 'frank', subscriptionId: subscription.subscriptionId };
    // What a consumer receives of a message: the exchange and the whole event (id, time, data).
    const sent = (entries: readonly OutboxEntry[]) => entries.map(({ exchange, event }) => ({ exchange, event }));

    // Renewed from the stored subscription (no snapshot), then delivered again at a later instant.
    const first = await renewals.renew([item], clock(), false);
    expect(first.emitted.map((entry) => entry.event.type)).toEqual([
      SubscriptionEventTypes.renewed,
      CommandTypes.rightsIssue,
    ]);
    clock.advance(60_000);
    expect(sent((await renewals.renew([item], clock(), true)).emitted)).toEqual(sent(first.emitted));

    // Renewed from the scheduler's snapshot, 7 hours into the next period: the 6-hour right has
    // ended and is not issued; the redelivery still builds the renewal as it was, hours later.
    clock.set('2026-05-02T07:00:00Z');
    const renewedEvent = first.emitted[0]!.event.data as SubscriptionEventData;
    const withSnapshot = { ...item, snapshot: snapshotOf(renewedEvent)! };
    const second = await renewals.renew([withSnapshot], clock(), false);
    expect(second.missed).toEqual([expect.objectContaining({ rights: 1 })]);
    const issued = second.emitted.find((entry) => entry.event.type === CommandTypes.rightsIssue)!;
    expect((issued.event.data as RightsIssueData).rights.map((right) => right.sku)).toEqual(['news']);
    clock.set('2026-05-02T20:00:00Z');
    const again = await renewals.renew([withSnapshot], clock(), true);
    expect(sent(again.emitted)).toEqual(sent(second.emitted));
    expect(again.missed).toEqual([]);
    expect(await subscriptions.get(A, 'frank', subscription.subscriptionId)).toMatchObject({
      nextPeriod: 2,
      generation: 3,
    });

    // A change after the renewal (suspend) does not change what the renewal sent.
    await subscriptions.transition(A, 'frank', subscription.subscriptionId, 'suspend');
    expect(sent((await renewals.renew([item], clock(), true)).emitted)).toEqual(sent(second.emitted));
  });

  it('when a stored subscription cannot be renewed among good ones, then the others renew, it is reported failed and the schedule leaves it out', async () => {
    clock.set('2026-04-01T00:00:00Z');
    const make = () => subscribe('R/2026-04-01T00:00:00Z/P1D', [{ sku: 'news' }]);
    const [first, broken, last] = [await make(), await make(), await make()];
    // Stored before the bounds existed: a period luxon cannot add up.
    await database.db
      .db!.collection('subscriptions')
      .updateOne({ _id: broken!.subscriptionId } as never, { $set: { timeSpec: 'R/2026-04-01T00:00:00Z/P300000Y' } });
    const items = [first!, broken!, last!].map(({ subscriptionId }) => ({ connectId: 'frank', subscriptionId }));
    const renewed = await renewals.renew(items, clock(), false);
    expect(renewed.failed.map(({ index }) => index)).toEqual([1]);
    expect(String(renewed.failed[0]!.error)).toMatch(/representable range/);
    const issuedFor = renewed.emitted
      .filter((entry) => entry.event.type === CommandTypes.rightsIssue)
      .map((entry) => (entry.event.data as RightsIssueData).subscriptionId);
    expect(issuedFor.sort()).toEqual([first!.subscriptionId, last!.subscriptionId].sort());
    const store = new SubscriptionStore(database.db);
    const scheduled = (
      await Promise.all(
        Array.from(
          { length: 64 },
          async (_, bucket) => (await store.ofBucket(bucket, { after: undefined, limit: 1000 })).items,
        ),
      )
    ).flat();
    const ids = scheduled.map((subscription) => subscription.subscriptionId);
    expect(ids).toContain(first!.subscriptionId);
    expect(ids).not.toContain(broken!.subscriptionId);
  });
});
