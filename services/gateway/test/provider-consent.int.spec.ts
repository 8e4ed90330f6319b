import { clientsOf, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Service providers agree to what they serve (docs/security.md "Who may grant what"), through
 * the gateway of a running system: the catalog names a SKU's provider and the grantors it lets
 * grant the SKU; nobody else makes rights count at that provider.
 */
const fx = systemFixture({
  name: 'provider_consent',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  env: { SCHEDULER_TICK_MS: '200' },
  seed: {
    clients: clientsOf({ spx: 'spx', acme: 'acme', evil: 'evil' }),
    users: ['bob'],
    skus: {
      'news-daily': { serviceProviderId: 'spx', grantorIds: ['acme'] },
      'open-sku': {},
    },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const SPX = TestSystem.clientAuthorization('spx');
const ACME = TestSystem.clientAuthorization('acme');
const EVIL = TestSystem.clientAuthorization('evil');
const right = (grantorId: string, sku: string, serviceProviderId?: string) => ({
  grantorId,
  sku,
  timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z',
  state: 'ACTIVE',
  ...(serviceProviderId === undefined ? {} : { serviceProviderId }),
});
const entitled = async () =>
  ((await (await fx.call('GET', '/id/users/bob/entitlements/news-daily', SPX)).json()) as { entitled: boolean })
    .entitled;

describe('who may grant what the catalog says', () => {
  it('when a grantor the catalog does not name grants the SKU, even naming its provider, then 401, and the provider sees nothing', async () => {
    for (const body of [right('evil', 'news-daily', 'spx'), right('evil', 'news-daily')]) {
      const refused = await fx.call('POST', '/id/users/bob/rights', EVIL, body);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toMatch(/^Basic /);
    }
    const subscription = await fx.call('POST', '/id/users/bob/subs', EVIL, {
      grantorId: 'evil',
      timeSpec: 'R/2026-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'news-daily' }],
    });
    expect(subscription.status).toBe(401);
    expect(await entitled()).toBe(false);
  });

  it('when a grant names a provider the catalog does not, then 400 naming the field, and no rights reach that provider', async () => {
    const rightNaming = await fx.call('POST', '/id/users/bob/rights', EVIL, right('evil', 'open-sku', 'acme'));
    expect(rightNaming.status).toBe(400);
    expect(await rightNaming.text()).toMatch(/^serviceProviderId: acme does not serve open-sku/);
    const templateNaming = await fx.call('POST', '/id/users/bob/subs', EVIL, {
      grantorId: 'evil',
      timeSpec: 'R/2026-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'open-sku' }, { sku: 'open-sku', serviceProviderId: 'acme' }],
    });
    expect(templateNaming.status).toBe(400);
    expect(await templateNaming.text()).toMatch(/^rightsSpec\[1\]\.serviceProviderId: acme does not serve open-sku/);
    const acmeSees = await fx.call('GET', '/id/users/bob/rights?grantorId=acme', ACME);
    expect(((await acmeSees.json()) as { right: unknown[] }).right).toEqual([]);
  });

  it('when a grantor the catalog names grants, then the right gets the catalog’s provider, and the provider sees it', async () => {
    const created = await fx.call('POST', '/id/users/bob/rights', ACME, right('acme', 'news-daily'));
    expect(created.status).toBe(201);
    expect(((await created.json()) as { serviceProviderId: string }).serviceProviderId).toBe('spx');
    await expect.poll(entitled).toBe(true);
    // The provider grants its own SKU too, as its own grantor.
    expect((await fx.call('POST', '/id/users/bob/rights', SPX, right('spx', 'news-daily'))).status).toBe(201);
  });

  it('when the catalog stops letting a grantor grant a SKU, then its subscription’s next renewals issue no right for that template, and the others still', async () => {
    const start = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1_000).toISOString().replace('.000Z', 'Z');
    // A period's right is issued only while the period lasts (docs/api.md): periods of 3 s, so
    // that renewals a couple of seconds late on a loaded machine are still issued.
    const created = await fx.call('POST', '/id/users/bob/subs', ACME, {
      grantorId: 'acme',
      timeSpec: `R/${start}/PT3S`,
      rightsSpec: [{ sku: 'news-daily' }, { sku: 'open-sku' }],
    });
    expect(created.status).toBe(201);
    const { subscriptionId } = (await created.json()) as { subscriptionId: string };
    const issued = async () => {
      const listed = await fx.call('GET', '/id/users/bob/rights?grantorId=acme&limit=1000', ACME);
      const rights = (
        (await listed.json()) as { right: Array<{ sku: string; link: Array<{ rel: string; href: string }> }> }
      ).right;
      const ofSubscription = rights.filter((one) =>
        one.link.some((link) => link.rel === 'subscription' && link.href.endsWith(subscriptionId)),
      );
      return {
        news: ofSubscription.filter((one) => one.sku === 'news-daily').length,
        open: ofSubscription.filter((one) => one.sku === 'open-sku').length,
      };
    };
    await expect.poll(async () => (await issued()).news).toBeGreaterThanOrEqual(1);
    const put = await fx.call('PUT', '/catalog/skus/news-daily', fx.system.adminHeaders().authorization!, {
      serviceProviderId: 'spx',
      grantorIds: [],
    });
    expect(put.status).toBe(204);
    // Once the catalog's change has reached the rights service (its own grant of the SKU is
    // refused there), renewals go on without that template: at most one issued before that
    // moment may still be on its way.
    await expect
      .poll(async () => (await fx.call('POST', '/id/users/bob/rights', ACME, right('acme', 'news-daily'))).status)
      .toBe(401);
    const before = await issued();
    await expect.poll(async () => (await issued()).open, { timeout: 40_000 }).toBeGreaterThanOrEqual(before.open + 3);
    const after = await issued();
    expect(after.news).toBeLessThanOrEqual(before.news + 1);
  }, 120_000);
});
