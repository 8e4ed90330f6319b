import { clientsOf, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/api.md "Grace": once its interval has ended, an ACTIVE right with a grace stays usable
// for that long (not `active`, but listed by the check, usable and consumable); the scheduler
// expires it when the grace ends.
const A = TestSystem.clientAuthorization('grantor-a');
const SP = TestSystem.clientAuthorization('provider-sp');
const seed = {
  clients: clientsOf({ 'grantor-a': 'A', 'provider-sp': 'SP' }),
  users: ['gina', 'hugo'],
  skus: { articles: { serviceProviderId: 'SP', grantorIds: ['A'] } },
};
const fx = systemFixture({
  name: 'grace',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  collect: { 'rights.events': 'right.expired' },
  seed,
});
beforeAll(fx.start);
afterAll(fx.stop);

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

type RightView = { state: string; active: boolean; inGrace: boolean; grace: string | null; graceEnds: string | null };

describe('grace (docs/api.md "Grace")', () => {
  it('when the interval of a right with a grace ends, then it is in grace: listed by the check until the grace ends, usable and consumable; then the scheduler expires it', async () => {
    // Seconds enough for the creation, then for the reads and uses in grace, on a loaded machine
    // (a creation has taken 3.7 s in CI beside the heaviest files).
    const end = Math.ceil(Date.now() / 1000) * 1000 + 10_000;
    const graceEnds = iso(end + 10_000);
    const created = await fx.call('POST', '/id/users/gina/rights', A, {
      sku: 'articles',
      grantorId: 'A',
      state: 'ACTIVE',
      quantity: 5,
      grace: 'PT10S',
      timeInterval: `${iso(end - 3_600_000)}/${iso(end)}`,
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const right = (await created.json()) as RightView & { rightId: string };
    expect(right).toMatchObject({ grace: 'PT10S', inGrace: false, graceEnds, active: true });
    const path = `/id/users/gina/rights/${right.rightId}`;
    const read = async () => (await (await fx.call('GET', path, A)).json()) as RightView;

    // Past the interval's end: not active (the contract's meaning), in grace, still ACTIVE.
    await vi.waitFor(async () => expect(await read()).toMatchObject({ inGrace: true }), { timeout: 20_000 });
    expect(await read()).toMatchObject({ state: 'ACTIVE', active: false, graceEnds });
    const check = (await (await fx.call('GET', '/id/users/gina/entitlements/articles', SP)).json()) as {
      entitled: boolean;
      until: string;
      rights: Array<{ inGrace: boolean; until: string }>;
    };
    expect(check).toMatchObject({ entitled: true, until: graceEnds });
    expect(check.rights).toEqual([expect.objectContaining({ inGrace: true, until: graceEnds })]);
    expect((await fx.call('POST', `${path}/usage`, SP, { amount: 1 })).status).toBe(204);
    const consumed = await fx.call('POST', '/id/users/gina/entitlements/articles/consumption', SP, { amount: 2 });
    expect(await consumed.json()).toMatchObject({ consumed: [{ rightId: right.rightId, amount: 2, remaining: 2 }] });

    // The grace's end: EXPIRED, its right.expired published, no longer entitled or usable.
    await fx
      .events('rights.events')
      .waitFor((messages) => messages.some((m) => m.body.subject === right.rightId), 30_000);
    expect(await read()).toMatchObject({ state: 'EXPIRED', inGrace: false });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(graceEnds));
    expect(await (await fx.call('GET', '/id/users/gina/entitlements/articles', SP)).json()).toMatchObject({
      entitled: false,
      rights: [],
    });
    expect((await fx.call('POST', `${path}/usage`, SP)).status).toBe(409);
  });

  it("when a grace is out of bounds, then 400 naming it; a subscription's template grace is each period's right's", async () => {
    for (const grace of ['P91D', 'P1M', 'PT', '7 days', 'P1DT1H'])
      expect(
        (
          await fx.call('POST', '/id/users/hugo/rights', A, {
            sku: 'articles',
            grantorId: 'A',
            grace,
            timeInterval: '2026-01-01T00:00:00Z/P1D',
          })
        ).status,
        grace,
      ).toBe(400);
    const subscribed = await fx.call('POST', '/id/users/hugo/subs', A, {
      grantorId: 'A',
      timeSpec: `R/${iso(Date.now())}/P1M`,
      rightsSpec: [{ sku: 'articles', grace: 'P7D' }],
    });
    expect(subscribed.status, await subscribed.clone().text()).toBe(201);
    const { subscriptionId, rightsSpec } = (await subscribed.json()) as {
      subscriptionId: string;
      rightsSpec: Array<{ grace: string | null }>;
    };
    expect(rightsSpec).toEqual([expect.objectContaining({ grace: 'P7D' })]);
    await vi.waitFor(
      async () => {
        const list = (await (await fx.call('GET', '/id/users/hugo/rights?grantorId=A', A)).json()) as {
          right: Array<RightView & { link: Array<{ rel: string; href: string }> }>;
        };
        const issued = list.right.filter((r) =>
          r.link.some((l) => l.rel === 'subscription' && l.href.endsWith(subscriptionId)),
        );
        expect(issued).toEqual([expect.objectContaining({ grace: 'P7D', inGrace: false })]);
      },
      { timeout: 10_000 },
    );
  });
});
