import type { AuditEntry, Right } from '@rs/contracts';
import { clientsOf, STAFF_ROLES, systemFixture, TestSystem, TokenIssuer } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/identity-providers.md "Issuers stay in their lane": trusting a grantor's identity provider
// never lets it speak for another tenant. Four providers, as a two-grantor platform runs them:
// acme's (its client and its staff), globex's (its client only), one trusted for any client
// ("*"), and the platform's own (its admin client by id, operators of every grantor). Each test
// reproduces a request that once crossed a lane (docs/decisions/0081), from an address of its own (the
// gateway trusts the loopback proxy), so that one test's refused tokens spend no other's budget.
const acmeIdp = new TokenIssuer({ issuer: 'self', path: '/realms/acme' });
const globexIdp = new TokenIssuer({ issuer: 'self', path: '/globex' });
const sharedIdp = new TokenIssuer({ issuer: 'self', path: '/shared' });
const platformIdp = new TokenIssuer({ issuer: 'self', path: '/platform' });
const staffOf = (grantors: string[]) => ({ ...STAFF_ROLES, grantor: 'grantor', grantors });
const env: Record<string, string> = { TRUSTED_PROXIES: '127.0.0.1', RATE_LIMIT_PER_SECOND: '0' };
const fx = systemFixture({
  name: 'issuer_lanes',
  backends: ['catalog', 'rights', 'subscriptions', 'webhooks'],
  env,
  seed: {
    clients: [...clientsOf({ acme: 'acme', globex: 'globex' }), { clientId: 'ops', grantorId: 'ops', admin: true }],
    users: ['alice'],
    skus: { minutes: { grantorIds: ['acme', 'globex'] } },
  },
});

beforeAll(async () => {
  for (const idp of [acmeIdp, globexIdp, sharedIdp, platformIdp]) await idp.start();
  const entry = (idp: TokenIssuer, rest: object) => ({
    issuer: idp.issuer,
    audience: idp.audience,
    jwksUri: idp.jwksUrl,
    claims: { roles: 'roles' },
    ...rest,
  });
  // The gateway's settings are known once the providers listen: set before the system starts.
  env.AUTH_ISSUERS = JSON.stringify([
    entry(acmeIdp, { clients: ['acme'], staff: staffOf(['acme']) }),
    entry(globexIdp, { clients: ['globex'] }),
    entry(sharedIdp, { clients: '*' }),
    entry(platformIdp, { clients: ['ops'], staff: staffOf(['*']) }),
  ]);
  await fx.start();
}, 180_000);
afterAll(async () => {
  await fx.stop();
  for (const idp of [acmeIdp, globexIdp, sharedIdp, platformIdp]) await idp.close();
});

let addresses = 0;
/** A caller at an address of its own (X-Forwarded-For through the trusted loopback proxy). */
const caller = () => {
  const address = `198.51.100.${++addresses}`;
  return (method: string, path: string, authorization: string, body?: unknown, headers: Record<string, string> = {}) =>
    fx.call(method, path, authorization, body, { 'x-forwarded-for': address, ...headers });
};
const bearer = (token: string) => `Bearer ${token}`;
const invalid = (description: string) =>
  `Bearer realm="rights", error="invalid_token", error_description="${description}"`;
const because = { 'x-audit-reason': 'the customer called' };
const ALL_SCOPES = 'id.user.right.read id.user.right.use id.user.right.create id.user.sub.read';
const start = () => new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function grant(grantorId: string, body: object = {}): Promise<Right> {
  const response = await fx.call('POST', '/id/users/alice/rights', TestSystem.clientAuthorization(grantorId), {
    sku: 'minutes',
    grantorId,
    timeInterval: `${start()}/P30D`,
    state: 'ACTIVE',
    quantity: 100,
    ...body,
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as Right;
}
/** The right as an admin reads it. */
const current = async (right: Right) =>
  (await (
    await fx.call('GET', `/id/users/alice/rights/${right.rightId}`, fx.system.adminHeaders().authorization!)
  ).json()) as Right;
const rightPath = (right: Right) => `/id/users/alice/rights/${right.rightId}`;

describe('clients: a provider names only the API clients its entry lists', () => {
  it("when globex's provider signs a token naming acme's client, then it is invalid_token, and acme's units stay", async () => {
    const right = await grant('acme');
    const call = caller();
    const forged = bearer(await globexIdp.token('acme', 'alice', { scope: ALL_SCOPES }));
    const consumed = await call('POST', '/id/users/alice/entitlements/minutes/consumption', forged, { amount: 5 });
    expect([consumed.status, consumed.headers.get('www-authenticate')]).toEqual([401, invalid('unknown client')]);
    const read = await call('GET', '/id/users/alice/rights?grantorId=acme', forged);
    expect(read.status).toBe(401);
    expect((await current(right)).remaining).toBe(100);
    // Its own client, for its own users, works.
    const own = bearer(await globexIdp.token('globex', 'alice', { scope: ALL_SCOPES }));
    expect((await call('GET', '/id/users/alice/rights?grantorId=globex', own)).status).toBe(200);
  });

  it('when a token names the admin client, then only a provider listing it by id is trusted (not "*"), and every change it makes is in the audit log', async () => {
    const right = await grant('globex');
    const call = caller();
    const usage = (authorization: string) => call('POST', `${rightPath(right)}/usage`, authorization);
    for (const idp of [globexIdp, sharedIdp]) {
      const refused = await usage(bearer(await idp.token('ops', 'alice', { scope: ALL_SCOPES })));
      expect([refused.status, refused.headers.get('www-authenticate')]).toEqual([401, invalid('unknown client')]);
    }
    expect((await current(right)).remaining).toBe(100);
    const listed = await usage(bearer(await platformIdp.token('ops', 'alice', { scope: ALL_SCOPES })));
    expect(listed.status, await listed.clone().text()).toBe(204);
    expect((await current(right)).remaining).toBe(99);
    // Audited as a change of the admin client, whichever way it authenticated.
    await vi.waitFor(
      async () => {
        const log = (await (
          await fx.call('GET', '/admin/audit?actor=ops', fx.system.adminHeaders().authorization!)
        ).json()) as { entries: AuditEntry[] };
        expect(log.entries).toContainEqual(
          expect.objectContaining({
            actor: expect.objectContaining({ kind: 'client', id: 'ops' }),
            action: 'POST /id/users/{connectId}/rights/{rightId}/usage',
            subject: expect.stringContaining(rightPath(right)),
            status: 204,
          }),
        );
      },
      { timeout: 10_000, interval: 250 },
    );
  });
});

describe('staff: a provider speaks for the grantors its entry names', () => {
  it("when acme's provider signs a staff token claiming globex too, or an admin's, then it is invalid_token and globex's right stays", async () => {
    const right = await grant('globex');
    const call = caller();
    const both = bearer(await acmeIdp.staffToken('eve', 'write', ['acme', 'globex']));
    const adjusted = await call('POST', `${rightPath(right)}/adjustments`, both, { amount: 50 }, because);
    expect(adjusted.status).toBe(401);
    // Where a Bearer token is an answer at all, the challenge says why.
    const read = await call('GET', rightPath(right), both);
    expect([read.status, read.headers.get('www-authenticate')]).toEqual([
      401,
      invalid('grantor not served by this issuer'),
    ]);
    const admin = await call('GET', rightPath(right), bearer(await acmeIdp.staffToken('eve', 'admin')));
    expect([admin.status, admin.headers.get('www-authenticate')]).toEqual([
      401,
      invalid('admin staff not served by this issuer'),
    ]);
    expect((await current(right)).remaining).toBe(100);
    // The platform's own operators serve every grantor.
    const operator = bearer(await platformIdp.staffToken('olga', 'write', ['globex']));
    expect((await call('POST', `${rightPath(right)}/adjustments`, operator, { amount: 1 }, because)).status).toBe(200);
  });

  it("when a staff member writes to another grantor's right or subscription, then it is 404, as an unknown id is", async () => {
    const right = await grant('globex');
    const subscription = (await (
      await fx.call('POST', '/id/users/alice/subs', TestSystem.clientAuthorization('globex'), {
        grantorId: 'globex',
        timeSpec: 'R/2030-01-01T00:00:00Z/P1M',
        rightsSpec: [{ sku: 'minutes' }],
      })
    ).json()) as { subscriptionId: string };
    const call = caller();
    const agent = bearer(await acmeIdp.staffToken('sam', 'write', ['acme']));
    for (const path of [
      `${rightPath(right)}/suspend`,
      '/id/users/alice/rights/01M99JHCK1ME9K70KV4A73QXVM/suspend',
      `/id/users/alice/subs/${subscription.subscriptionId}/suspend`,
      '/id/users/alice/subs/01M99JHCK1ME9K70KV4A73QXVM/suspend',
    ]) {
      const response = await call('POST', path, agent, undefined, because);
      expect([path, response.status]).toEqual([path, 404]);
    }
    const adjusted = await call('POST', `${rightPath(right)}/adjustments`, agent, { amount: 1 }, because);
    expect(adjusted.status).toBe(404);
    expect(await current(right)).toMatchObject({ state: 'ACTIVE', remaining: 100 });
  });

  it('when write staff try to manage webhook endpoints, then they are refused; they still read them, and admin staff manage them', async () => {
    const acme = TestSystem.clientAuthorization('acme');
    const made = await fx.call('POST', '/webhooks/endpoints', acme, { url: 'http://127.0.0.1:9/acme' });
    expect(made.status).toBe(201);
    const { endpointId } = (await made.json()) as { endpointId: string };
    const call = caller();
    const agent = bearer(await acmeIdp.staffToken('sam', 'write', ['acme']));
    const created = await call('POST', '/webhooks/endpoints', agent, { url: 'http://127.0.0.1:9/feed' }, because);
    expect(created.status).toBe(401);
    expect(await created.text()).not.toContain('whsec_');
    const rotated = await call('POST', `/webhooks/endpoints/${endpointId}/secret`, agent, undefined, because);
    expect(rotated.status).toBe(401);
    expect(await rotated.text()).not.toContain('whsec_');
    expect((await call('DELETE', `/webhooks/endpoints/${endpointId}`, agent, undefined, because)).status).toBe(401);
    expect((await call('GET', `/webhooks/endpoints/${endpointId}`, agent)).status).toBe(200);
    const listed = (await (await fx.call('GET', '/webhooks/endpoints', acme)).json()) as { endpoints: unknown[] };
    expect(listed.endpoints).toHaveLength(1);
    const operator = bearer(await platformIdp.staffToken('olga', 'admin'));
    expect((await call('POST', `/webhooks/endpoints/${endpointId}/secret`, operator, undefined, because)).status).toBe(
      200,
    );
  });
});

describe('time: a token lives no longer than JWT_MAX_TOKEN_LIFETIME_S from now', () => {
  it('when a token is issued a year ahead with a minute to live, or expires beyond the cap without iat, then it is refused', async () => {
    const call = caller();
    const now = Math.floor(Date.now() / 1000);
    const ahead = await acmeIdp.token('acme', 'alice', {
      scope: ALL_SCOPES,
      iat: now + 365 * 86_400,
      exp: now + 365 * 86_400 + 60,
    });
    const answer = await call('GET', '/id/users/alice/rights?grantorId=acme', bearer(ahead));
    expect([answer.status, answer.headers.get('www-authenticate')]).toEqual([401, invalid('issued in the future')]);
    const endless = await acmeIdp.token('acme', 'alice', { scope: ALL_SCOPES, iat: undefined, exp: now + 2 * 86_400 });
    expect(
      (await call('GET', '/id/users/alice/rights?grantorId=acme', bearer(endless))).headers.get('www-authenticate'),
    ).toBe(invalid('lifetime too long'));
  });
});

describe('keys: a provider that fails changes nothing', () => {
  it('when its keys answer 500, then tokens naming made-up kids make at most one fetch and their sender is soon refused, while known keys keep verifying', async () => {
    const known = bearer(await acmeIdp.token('acme', 'alice', { scope: ALL_SCOPES }));
    acmeIdp.mode = 'failing';
    try {
      const fetched = acmeIdp.jwksRequests;
      const call = caller();
      const statuses: number[] = [];
      for (let i = 0; i < 60; i++) {
        const madeUp = await acmeIdp.sign({ sub: 'alice', client_id: 'acme' }, { kid: `made-up-${i}` });
        statuses.push((await call('GET', '/id/users/alice/rights?grantorId=acme', bearer(madeUp))).status);
      }
      expect(acmeIdp.jwksRequests - fetched).toBeLessThanOrEqual(1);
      expect(statuses.slice(0, 30)).toEqual(statuses.slice(0, 30).map(() => 401));
      expect(statuses.slice(30)).toContain(429);
      expect(new Set(statuses)).toEqual(new Set([401, 429]));
      // Someone else, with a token of a key fetched before the outage, is not affected.
      expect((await caller()('GET', '/id/users/alice/rights?grantorId=acme', known)).status).toBe(200);
    } finally {
      acmeIdp.mode = 'up';
    }
  });
});

describe('what a request carries is stored or refused, never a 500', () => {
  it('when a reason holds a NUL, then it is 400 and nothing changes; when a staff name does, then it is kept escaped', async () => {
    const right = await grant('acme');
    const call = caller();
    const agent = bearer(await acmeIdp.staffToken('nul', 'write', ['acme']));
    const refused = await call(
      'POST',
      `${rightPath(right)}/adjustments`,
      agent,
      { amount: 5 },
      { 'x-audit-reason': 'why%00not' },
    );
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('X-Audit-Reason');
    expect((await current(right)).remaining).toBe(100);
    const named = bearer(
      await acmeIdp.sign({
        sub: 'nul-name',
        azp: 'console',
        roles: [STAFF_ROLES.write],
        grantor: ['acme'],
        name: 'Ann\u0000Lee',
      }),
    );
    const adjusted = await call('POST', `${rightPath(right)}/adjustments`, named, { amount: 5 }, because);
    expect(adjusted.status, await adjusted.clone().text()).toBe(200);
    await vi.waitFor(
      async () => {
        const log = (await (
          await fx.call('GET', '/admin/audit?actor=nul-name', fx.system.adminHeaders().authorization!)
        ).json()) as { entries: AuditEntry[] };
        expect(log.entries.map((entry) => entry.actor.name)).toEqual(['Ann\\u0000Lee']);
      },
      { timeout: 10_000, interval: 250 },
    );
  });

  it('when adjustments would take a right past 10^9 units, then they are 400 naming the cap, and quantity stays', async () => {
    const right = await grant('acme', { quantity: 999_999_990 });
    const admin = fx.system.adminHeaders().authorization!;
    const over = await fx.call('POST', `${rightPath(right)}/adjustments`, admin, { amount: 11 });
    expect(over.status).toBe(400);
    expect(await over.text()).toContain('1000000000');
    expect((await fx.call('POST', `${rightPath(right)}/adjustments`, admin, { amount: 10 })).status).toBe(200);
    for (let i = 0; i < 4; i++)
      expect((await fx.call('POST', `${rightPath(right)}/adjustments`, admin, { amount: 1_000_000_000 })).status).toBe(
        400,
      );
    expect(await current(right)).toMatchObject({ quantity: 1_000_000_000, remaining: 1_000_000_000 });
  });
});
