import { TestSystem, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const A = TestSystem.clientAuthorization('grantor-a');

type RightView = { rightId: string; state: string; timeInterval: string; link: Array<{ rel: string; href: string }> };
async function rightsOf(subscriptionId: string): Promise<RightView[]> {
  const list = (await (await call('GET', '/id/users/frank/rights?grantorId=A&limit=1000')).json()) as {
    right: RightView[];
  };
  return list.right.filter((r) =>
    r.link.some((l) => l.rel === 'subscription' && l.href.endsWith(`/subs/${subscriptionId}`)),
  );
}
const secondsAgo = (s: number) => isoSecond(Math.floor(Date.now() / 1000) * 1000 - s * 1000);
const isoSecond = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, 'Z');

const fx = systemFixture({
  name: 'renewal',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  env: { SCHEDULER_TICK_MS: '200' },
  collect: { 'subscriptions.events': '#' },
  seed: { clients: [{ clientId: 'grantor-a', grantorId: 'A' }], users: ['frank'], skus: { news: {}, video: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);
const call = (method: string, path: string, body?: unknown) => fx.call(method, path, A, body);

/**
 * How long a rebuild at start may take here: it reads the subscriptions', rights' and holds'
 * listings bucket by bucket (3 × 64 requests, one after the other), and beside the suite's
 * heaviest files, with this file's short-period subscriptions renewing, each took about 100 ms
 * (CI of 2026-12-02: no rebuild logged within 19 s of the restart).
 */
const REBUILD = { timeout: 90_000 };

/** Starts the stopped scheduler once the events it was sent meanwhile are in `queue`, without them. */
async function startLosingEvents(queue: string): Promise<void> {
  const { rabbit, vhost } = fx.system;
  await expect.poll(() => rabbit.queueMessageCount(vhost, queue)).toBeGreaterThan(0);
  await rabbit.purgeQueue(vhost, queue);
  await fx.system.service('scheduler').start();
}

describe('renewal (docs/api.md "Renewal")', () => {
  it('when a subscription started in the past, then the current period is issued at once and each new period yields one right per template', async () => {
    // Started 9 s ago, periods of 4 s: periods 0 and 1 have ended, period 2 is current.
    const started = Math.floor(Date.now() / 1000) * 1000 - 9_000;
    const response = await call('POST', '/id/users/frank/subs', {
      grantorId: 'A',
      timeSpec: `R/${isoSecond(started)}/PT4S`,
      rightsSpec: [{ sku: 'news' }, { sku: 'video', timeSpec: 'PT1S' }],
    });
    expect(response.status).toBe(201);
    const { subscriptionId } = (await response.json()) as { subscriptionId: string };
    // The current period's long right at once (its 1 s right has already ended: never issued).
    await expect.poll(async () => (await rightsOf(subscriptionId)).length).toBeGreaterThanOrEqual(1);
    // Then, once the next periods have begun, each period has its rights exactly once.
    const startsOf = (rights: RightView[]) => rights.map((r) => r.timeInterval.split('/')[0]!);
    await expect
      .poll(async () => new Set(startsOf(await rightsOf(subscriptionId))).size, { timeout: 20_000 })
      .toBeGreaterThanOrEqual(3);
    const rights = await rightsOf(subscriptionId);
    const starts = startsOf(rights);
    const byStart = new Map<string, number>();
    for (const start of starts) byStart.set(start, (byStart.get(start) ?? 0) + 1);
    for (const count of byStart.values()) expect(count).toBeLessThanOrEqual(2);
    expect(new Set(rights.map((r) => r.rightId)).size).toBe(rights.length);
    // No right for the periods that had ended before the subscription was created.
    expect(starts).not.toContain(isoSecond(started));
    expect(starts).not.toContain(isoSecond(started + 4_000));
    expect(rights.every((r) => r.state === 'ACTIVE' || r.state === 'EXPIRED')).toBe(true);
    await fx
      .events('subscriptions.events')
      .waitFor((m) => m.some((e) => e.body.subject === subscriptionId && e.routingKey === 'subscription.renewed'));
  });

  it('when a template carries a quantity, then the subscription shows it and each period’s right brings a fresh allowance', async () => {
    const started = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    const response = await call('POST', '/id/users/frank/subs', {
      grantorId: 'A',
      timeSpec: `R/${isoSecond(started)}/PT3S`,
      rightsSpec: [{ sku: 'news', quantity: 10 }, { sku: 'video' }],
    });
    expect(response.status).toBe(201);
    const subscription = (await response.json()) as { subscriptionId: string; rightsSpec: unknown[] };
    expect(subscription.rightsSpec).toMatchObject([
      { sku: 'news', quantity: 10, grace: null },
      { sku: 'video', quantity: null, grace: null },
    ]);
    type Metered = RightView & { sku: string; quantity: number | null; remaining: number | null };
    const issued = async () => (await rightsOf(subscription.subscriptionId)) as Metered[];
    // Two periods' rights: each of news with its own 10 units, video plain.
    await expect
      .poll(async () => (await issued()).filter((right) => right.sku === 'news').length)
      .toBeGreaterThanOrEqual(2);
    for (const right of await issued())
      expect(right, right.sku).toMatchObject(
        right.sku === 'news' ? { quantity: 10, remaining: 10 } : { quantity: null, remaining: null },
      );
    const refused = await call('POST', '/id/users/frank/subs', {
      grantorId: 'A',
      timeSpec: `R/${isoSecond(started)}/PT3S`,
      rightsSpec: [{ sku: 'news', quantity: 0 }],
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/^rightsSpec\.0\.quantity: /);
  });

  it('when the scheduler lost the events of a subscription, then it rebuilds its schedule from the subscriptions service at start', async () => {
    await fx.system.service('scheduler').stop();
    const response = await call('POST', '/id/users/frank/subs', {
      grantorId: 'A',
      timeSpec: `R1/${secondsAgo(-1)}/PT1H`,
      rightsSpec: [{ sku: 'news' }],
    });
    const { subscriptionId } = (await response.json()) as { subscriptionId: string };
    await startLosingEvents('scheduler.subscriptions-events');
    await expect.poll(async () => (await rightsOf(subscriptionId)).length, REBUILD).toBe(1);
  }, 150_000);

  it('when the scheduler lost the events of a right, then it rebuilds its expiries from the rights service at start', async () => {
    await fx.system.service('scheduler').stop();
    const created = await call('POST', '/id/users/frank/rights', {
      sku: 'news',
      grantorId: 'A',
      state: 'ACTIVE',
      timeInterval: `${secondsAgo(1)}/PT3S`,
    });
    const { rightId } = (await created.json()) as { rightId: string };
    await startLosingEvents('scheduler.rights-events');
    await expect
      .poll(
        async () =>
          ((await (await call('GET', `/id/users/frank/rights/${rightId}`)).json()) as { state: string }).state,
        REBUILD,
      )
      .toBe('EXPIRED');
  }, 150_000);
});
