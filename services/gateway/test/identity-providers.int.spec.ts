import { ProviderShapes, TestSystem, TokenIssuer } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/identity-providers.md: the gateway trusts several issuers at once (AUTH_ISSUERS), each
// token verified only with its own issuer's keys, found by discovery or at a given JWKS URL, and
// its client, user and scopes read from the claims that issuer uses. Each issuer below signs
// tokens of exactly the shape its namesake does.
const shapes = new ProviderShapes();
// Unreachable when the gateway starts.
const late = new TokenIssuer({ issuer: 'self', audience: 'rights-api' });
const providers = { keycloak: shapes.keycloak, auth0: shapes.auth0, okta: shapes.okta, entra: shapes.entra, late };
let system: TestSystem;

const basic = (id: string) => `Basic ${Buffer.from(`${id}:secret-of-${id}`).toString('base64')}`;
const bearer = (token: string) => `Bearer ${token}`;
/** A request from `address` (forwarded by the trusted loopback proxy): each address has its own failure budget. */
const call = (path: string, authorization: string, address = '127.0.0.1') =>
  fetch(`${system.gatewayUrl}${path}`, {
    headers: { authorization, 'x-forwarded-for': address },
    redirect: 'manual',
  });
const rightsOf = (user: string, authorization: string, address?: string) =>
  call(`/id/users/${user}/rights?grantorId=A`, authorization, address);
const invalid = (description: string) =>
  `Bearer realm="rights", error="invalid_token", error_description="${description}"`;
/** A counter of the gateway's /metrics, summed over the series that carry all these labels. */
const metric = async (name: string, labels: Record<string, string>) => {
  const text = await (await fetch(system.service('gateway').metricsUrl)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`))
    .filter((line) => Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`)))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
};

beforeAll(async () => {
  await shapes.start();
  await late.start();
  late.mode = 'down';
  const issuers = [...shapes.issuers(), { issuer: late.issuer, audience: 'rights-api', clients: ['late-app'] }];
  system = await TestSystem.start({
    name: 'identity_providers',
    backends: ['catalog', 'rights'],
    env: { AUTH_ISSUERS: JSON.stringify(issuers), RATE_LIMIT_PER_SECOND: '0', TRUSTED_PROXIES: '127.0.0.1' },
  });
  const admin = system.adminHeaders().authorization!;
  const put = (path: string, body?: unknown) =>
    fetch(`${system.gatewayUrl}${path}`, {
      method: 'PUT',
      headers: { authorization: admin, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  for (const client of ['grantor-a', 'kc-app', 'auth0-app', 'okta-app', 'entra-app', 'late-app'])
    expect((await put(`/admin/clients/${client}`, { secret: `secret-of-${client}`, grantorId: 'A' })).status).toBe(201);
  for (const user of ['alice', 'bob', 'carol', 'dave', 'erin'])
    expect((await put(`/id/users/${user}`)).status).toBe(201);
  expect((await put('/catalog/skus/news', { grantorIds: ['A'] })).status).toBe(201);
});
afterAll(async () => {
  await system?.stop();
  await shapes.close();
  await late.close();
});

describe('tokens of the identity providers operators run (docs/identity-providers.md)', () => {
  it.each([
    ['Keycloak (azp, realm_access.roles)', 'keycloak', 'alice', ['rights-reader']],
    ['Auth0 (azp, permissions, a user claim of its own)', 'auth0', 'bob', ['read:rights']],
    ['Okta (cid, scp as a list)', 'okta', 'carol', ['id.user.right.read']],
    ['Entra ID (azp, scp as a string)', 'entra', 'dave', ['id.user.right.read']],
  ] as const)(
    'when %s signs a user token, then it reaches its user’s rights with the mapped scopes, and no one else’s',
    async (_name, provider, user, grants) => {
      const granted = await shapes.userToken(provider, grants);
      const response = await rightsOf(user, bearer(granted));
      expect(response.status, await response.clone().text()).toBe(200);
      expect(await response.json()).toEqual({ right: [] });
      expect((await rightsOf('erin', bearer(granted))).headers.get('www-authenticate')).toBe(
        invalid('token not issued for this user'),
      );
      const without = await rightsOf(user, bearer(await shapes.userToken(provider, [])));
      expect([without.status, without.headers.get('www-authenticate')]).toEqual([
        401,
        'Bearer realm="rights", error="insufficient_scope", scope="id.user.right.read"',
      ]);
    },
  );

  it('when a client-credentials token comes (Auth0: sub <client>@clients, gty), then it acts as its client on any of its users, within its scopes only', async () => {
    const machine = await providers.auth0.sign({
      sub: 'auth0-app@clients',
      azp: 'auth0-app',
      gty: 'client-credentials',
      permissions: ['read:rights'],
    });
    for (const user of ['alice', 'erin']) expect((await rightsOf(user, bearer(machine))).status).toBe(200);
    const otherGrantor = await call('/id/users/erin/rights?grantorId=B', bearer(machine));
    expect([otherGrantor.status, otherGrantor.headers.get('www-authenticate')]).toEqual([
      401,
      'Basic realm="rights", error="grantor_mismatch"',
    ]);
    const unscoped = await call('/id/users/erin/subs?grantorid=A', bearer(machine));
    expect(unscoped.headers.get('www-authenticate')).toBe(
      'Bearer realm="rights", error="insufficient_scope", scope="id.user.sub.read"',
    );
    const basicOnly = await fetch(`${system.gatewayUrl}/id/users/erin/rights`, {
      method: 'POST',
      headers: { authorization: bearer(machine), 'content-type': 'application/json' },
      body: JSON.stringify({ sku: 'news', grantorId: 'A', timeInterval: '2026-01-01T00:00:00Z/P1D' }),
    });
    expect([basicOnly.status, basicOnly.headers.get('www-authenticate')]).toEqual([
      401,
      'Basic realm="rights", charset="UTF-8"',
    ]);
  });

  it('when Keycloak signs a service account’s token (preferred_username service-account-<client>, sub a UUID, no client_id), then it acts as its client', async () => {
    const machine = await providers.keycloak.sign({
      sub: '0b7c2f4e-9a1d-4c3b-8e5f-6a7b8c9d0e1f',
      azp: 'kc-app',
      preferred_username: 'service-account-kc-app',
      realm_access: { roles: ['rights-reader'] },
    });
    // Any user of its client's grantor, as its Basic credentials would, within its scopes.
    for (const user of ['alice', 'erin']) expect((await rightsOf(user, bearer(machine))).status).toBe(200);
    // Another client's service account name does not make it one.
    const pretender = await providers.keycloak.sign({
      sub: '0b7c2f4e-9a1d-4c3b-8e5f-6a7b8c9d0e1f',
      azp: 'kc-app',
      preferred_username: 'service-account-okta-app',
      realm_access: { roles: ['rights-reader'] },
    });
    expect((await rightsOf('erin', bearer(pretender))).headers.get('www-authenticate')).toBe(
      invalid('token not issued for this user'),
    );
  });

  it('when a token names one issuer and is signed with another’s key, or names an issuer not trusted, then it is refused', async () => {
    const forged = await providers.keycloak.sign({
      iss: providers.okta.issuer,
      aud: 'api://rights',
      uid: 'carol',
      cid: 'okta-app',
      scp: ['id.user.right.read'],
    });
    const response = await rightsOf('carol', bearer(forged));
    expect([response.status, response.headers.get('www-authenticate')]).toEqual([401, invalid('invalid signature')]);
    const stranger = await providers.keycloak.sign({
      iss: 'https://idp.elsewhere.example',
      sub: 'alice',
      azp: 'kc-app',
    });
    expect((await rightsOf('alice', bearer(stranger))).headers.get('www-authenticate')).toBe(invalid('unknown issuer'));
    const wrongAudience = await providers.keycloak.sign({ aud: 'api://rights', sub: 'alice', azp: 'kc-app' });
    expect((await rightsOf('alice', bearer(wrongAudience))).headers.get('www-authenticate')).toBe(
      invalid('wrong audience'),
    );
  });

  it('when a thousand tokens name unknown keys within seconds, then the provider is asked for its keys at most once, and their sender is soon refused', async () => {
    const fetched = providers.entra.jwksRequests;
    const jwksOfEntra = { issuer: providers.entra.issuer, document: 'jwks' };
    const fetchesCounted = await metric('gateway_issuer_fetches_total', jwksOfEntra);
    const flood = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) =>
        providers.entra.sign(
          { oid: 'dave', azp: 'entra-app', scp: 'id.user.right.read' },
          { kid: `random-${i}-${Math.random()}` },
        ),
      ),
    );
    // Forged tokens spend their sender's failure budget (docs/api.md "No lock-out"): 401, then 429.
    const statuses: number[] = [];
    for (let i = 0; i < flood.length; i += 50) {
      const answers = await Promise.all(
        flood.slice(i, i + 50).map((token) => rightsOf('dave', bearer(token), '203.0.113.7')),
      );
      statuses.push(...answers.map((answer) => answer.status));
    }
    expect(new Set(statuses)).toEqual(new Set([401, 429]));
    expect(statuses.slice(0, 30)).toEqual(statuses.slice(0, 30).map(() => 401));
    expect(providers.entra.jwksRequests - fetched).toBeLessThanOrEqual(1);
    expect((await metric('gateway_issuer_fetches_total', jwksOfEntra)) - fetchesCounted).toBe(
      providers.entra.jwksRequests - fetched,
    );
  });

  it('when a token is presented again, then its signature is not checked again', async () => {
    const token = await shapes.userToken('okta', ['id.user.right.read']);
    expect((await rightsOf('carol', bearer(token))).status).toBe(200);
    const remembered = await metric('gateway_bearer_verifications_total', { outcome: 'remembered' });
    const verified = await metric('gateway_bearer_verifications_total', { outcome: 'verified' });
    for (let i = 0; i < 5; i++) expect((await rightsOf('carol', bearer(token))).status).toBe(200);
    expect(await metric('gateway_bearer_verifications_total', { outcome: 'remembered' })).toBe(remembered + 5);
    expect(await metric('gateway_bearer_verifications_total', { outcome: 'verified' })).toBe(verified);
  });

  it('when an issuer was unreachable at start, then its tokens are 503 with Retry-After until it is reached, while Basic and the other issuers work', async () => {
    const token = await providers.late.sign({ sub: 'erin', client_id: 'late-app', scope: 'id.user.right.read' });
    const early = await rightsOf('erin', bearer(token));
    expect([early.status, early.headers.get('retry-after')]).toEqual([503, expect.stringMatching(/^\d+$/)]);
    expect((await rightsOf('erin', basic('grantor-a'))).status).toBe(200);
    expect((await rightsOf('alice', bearer(await shapes.userToken('keycloak', ['rights-reader'])))).status).toBe(200);
    const askedWhileDown = providers.late.discoveryRequests;
    providers.late.mode = 'up';
    await vi.waitFor(async () => expect((await rightsOf('erin', bearer(token))).status).toBe(200), {
      timeout: 30_000,
      interval: 500,
    });
    expect(providers.late.discoveryRequests).toBeGreaterThan(askedWhileDown);
  });
  it('when a provider rotates its key, then new tokens verify after one fetch of its keys, and old ones until they expire', async () => {
    const old = await shapes.userToken('keycloak', ['rights-reader']);
    expect((await rightsOf('alice', bearer(old))).status).toBe(200);
    const fetched = providers.keycloak.jwksRequests;
    await providers.keycloak.rotate();
    const renewed = await shapes.userToken('keycloak', ['rights-reader']);
    // Keys fetched less than 30 s ago are not fetched again, whatever a token says: the new key
    // is found once that has passed, by one fetch.
    await vi.waitFor(async () => expect((await rightsOf('alice', bearer(renewed))).status).toBe(200), {
      timeout: 45_000,
      interval: 1_000,
    });
    expect((await rightsOf('alice', bearer(await shapes.userToken('keycloak', ['rights-reader'])))).status).toBe(200);
    expect(
      (
        await rightsOf(
          'alice',
          bearer(
            await providers.keycloak.sign(
              { sub: 'alice', azp: 'kc-app', realm_access: { roles: ['rights-reader'] } },
              { kid: 'test-key-1' },
            ),
          ),
        )
      ).status,
    ).toBe(401);
    expect((await rightsOf('alice', bearer(old))).status).toBe(200);
    expect(providers.keycloak.jwksRequests - fetched).toBe(1);
  });
});

describe('who is calling (docs/api.md "Who is calling")', () => {
  const me = async (authorization: string) => {
    const response = await call('/id/me', authorization);
    expect(response.status, await response.clone().text()).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    return (await response.json()) as Record<string, unknown>;
  };

  it('when a Basic client, a user’s app and a client’s own token ask, then each is told what the gateway made of it', async () => {
    expect(await me(basic('grantor-a'))).toEqual({
      kind: 'client',
      id: 'grantor-a',
      clientId: 'grantor-a',
      grantorId: 'A',
      admin: false,
      issuer: null,
      name: null,
      staff: null,
      scopes: [],
    });
    expect(await me(bearer(await shapes.userToken('okta', ['id.user.right.read'])))).toMatchObject({
      kind: 'user',
      id: 'carol',
      clientId: 'okta-app',
      grantorId: 'A',
      issuer: providers.okta.issuer,
      staff: null,
      scopes: expect.arrayContaining(['id.user.right.read']),
    });
    const machine = await providers.auth0.sign({
      sub: 'auth0-app@clients',
      azp: 'auth0-app',
      gty: 'client-credentials',
      permissions: ['read:rights'],
    });
    expect(await me(bearer(machine))).toMatchObject({
      kind: 'client',
      id: 'auth0-app',
      issuer: providers.auth0.issuer,
      scopes: ['id.user.right.read'],
    });
  });

  it('when a staff token’s roles claim is a space-separated string, then /id/me gives the same level the API decides by', async () => {
    const created = await fetch(`${system.gatewayUrl}/id/users/erin/rights`, {
      method: 'POST',
      headers: { authorization: basic('grantor-a'), 'content-type': 'application/json' },
      body: JSON.stringify({ sku: 'news', grantorId: 'A', timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z' }),
    });
    const { rightId } = (await created.json()) as { rightId: string };
    const suspend = (authorization: string) =>
      fetch(`${system.gatewayUrl}/id/users/erin/rights/${rightId}/suspend`, {
        method: 'POST',
        headers: { authorization, 'x-audit-reason': 'the customer asked', 'x-forwarded-for': '127.0.0.1' },
      });
    const agentWith = async (roles: string) =>
      bearer(
        await providers.keycloak.sign({
          sub: `agent-${roles.length}`,
          azp: 'console',
          name: 'Sam',
          grantor: 'A',
          realm_access: { roles },
        }),
      );
    const reader = await agentWith('offline_access rights-support');
    expect(await me(reader)).toMatchObject({
      kind: 'staff',
      issuer: providers.keycloak.issuer,
      name: 'Sam',
      staff: { level: 'read', grantors: ['A'] },
    });
    expect((await suspend(reader)).status).toBe(401);
    const writer = await agentWith('rights-support rights-support-write');
    expect(await me(writer)).toMatchObject({ kind: 'staff', staff: { level: 'write', grantors: ['A'] } });
    expect((await suspend(writer)).status).toBe(204);
  });
});

describe('staff members (docs/identity-providers.md "Staff")', () => {
  /** A support agent of Keycloak's realm: `sub` and `name`, its realm roles and the grantors it serves. */
  const agent = (sub: string, roles: string[], grantors: string[] = []) => shapes.staffToken(sub, roles, grantors);

  it('when staff of a grantor read and change a right of any of its users, then reading needs a role and changing the write role; another grantor’s right is not there for them', async () => {
    const created = await fetch(`${system.gatewayUrl}/id/users/erin/rights`, {
      method: 'POST',
      headers: { authorization: basic('grantor-a'), 'content-type': 'application/json' },
      body: JSON.stringify({ sku: 'news', grantorId: 'A', timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z' }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const { rightId } = (await created.json()) as { rightId: string };
    const right = `/id/users/erin/rights/${rightId}`;
    const suspend = (authorization: string) =>
      fetch(`${system.gatewayUrl}${right}/suspend`, {
        method: 'POST',
        headers: { authorization, 'x-audit-reason': 'the customer asked' },
      });

    const reader = bearer(await agent('ann', ['rights-support'], ['A']));
    expect((await call(right, reader)).status).toBe(200);
    const refused = await suspend(reader);
    expect([refused.status, refused.headers.get('www-authenticate')]).toEqual([
      401,
      'Bearer realm="rights", error="insufficient_scope", scope="write"',
    ]);

    const elsewhere = bearer(await agent('bea', ['rights-support-write'], ['B']));
    // Another grantor's right is not there for them, to read or to change (as an unknown id is).
    expect((await call(right, elsewhere)).status).toBe(404);
    expect((await suspend(elsewhere)).status).toBe(404);

    const writer = bearer(await agent('cal', ['offline_access', 'rights-support-write'], ['B', 'A']));
    const suspended = await suspend(writer);
    expect(suspended.status, await suspended.clone().text()).toBe(204);
    expect(await (await call(right, reader)).json()).toMatchObject({ rightId, state: 'SUSPENDED' });

    // No grantor is no reach; an admin reaches everything, the admin API too.
    expect(
      (await call(right, bearer(await agent('dee', ['rights-support-write'])))).headers.get('www-authenticate'),
    ).toBe(invalid('a staff token names no grantor (grantor)'));
    const admin = bearer(await agent('eve', ['rights-admin']));
    expect((await call(right, admin)).status).toBe(200);
    expect((await call('/admin/clients', admin)).status).toBe(200);
    expect((await call('/admin/clients', writer)).status).toBe(401);
  });
});
