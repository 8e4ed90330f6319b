import type { AuditEntry } from '@rs/contracts';
import { KEYCLOAK_CLAIMS, startKeycloak, TestSystem, type RunningKeycloak } from '@rs/testing';
import { decodeJwt } from 'jose';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/identity-providers.md "Keycloak as it ships": a real Keycloak (the distribution
// deploy/local/setup.sh takes from Maven Central), with acme's realm as a grantor would set it up:
// a confidential client `acme` with its service account, the console's public client (PKCE), a
// support agent with the write role, and an "Audience" mapper naming the API. The gateway trusts
// the realm for acme only (docs/identity-providers.md "Issuers stay in their lane").
const ACME_SECRET = 'acme-client-secret-0123';
const CHROMIUM = '/usr/bin/chromium';
let keycloak: RunningKeycloak;
let system: TestSystem;
let realmUrl: string;

const audience = {
  name: 'audience',
  protocol: 'openid-connect',
  protocolMapper: 'oidc-audience-mapper',
  config: { 'included.custom.audience': 'rights-api', 'access.token.claim': 'true', 'id.token.claim': 'false' },
};
// One realm per grantor: every agent of this realm serves acme.
const grantor = {
  name: 'grantor',
  protocol: 'openid-connect',
  protocolMapper: 'oidc-hardcoded-claim-mapper',
  config: { 'claim.name': 'grantor', 'claim.value': 'acme', 'jsonType.label': 'String', 'access.token.claim': 'true' },
};
const person = (username: string, firstName: string, roles: string[]) => ({
  username,
  enabled: true,
  firstName,
  lastName: 'Example',
  email: `${username}@acme.example`,
  emailVerified: true,
  credentials: [{ type: 'password', value: `${username}-password`, temporary: false }],
  realmRoles: roles,
});
const realm = (consoleUrl: string) => ({
  realm: 'acme',
  enabled: true,
  roles: { realm: [{ name: 'rights-reader' }, { name: 'rights-support' }, { name: 'rights-support-write' }] },
  clients: [
    {
      clientId: 'acme',
      enabled: true,
      publicClient: false,
      secret: ACME_SECRET,
      serviceAccountsEnabled: true,
      standardFlowEnabled: false,
      directAccessGrantsEnabled: false,
      protocolMappers: [audience],
    },
    {
      clientId: 'rights-console',
      enabled: true,
      publicClient: true,
      standardFlowEnabled: true,
      // The API-level staff test signs in without a browser.
      directAccessGrantsEnabled: true,
      redirectUris: [consoleUrl],
      webOrigins: ['+'],
      attributes: { 'pkce.code.challenge.method': 'S256' },
      protocolMappers: [audience, grantor],
    },
  ],
  users: [
    { username: 'service-account-acme', enabled: true, serviceAccountClientId: 'acme', realmRoles: ['rights-reader'] },
    person('agnes', 'Agnes', ['rights-support-write']),
  ],
});

beforeAll(async () => {
  keycloak = await startKeycloak();
  realmUrl = `${keycloak.url}/realms/acme`;
  system = await TestSystem.start({
    name: 'keycloak',
    backends: ['catalog', 'rights'],
    env: {
      AUTH_ISSUERS: JSON.stringify([
        {
          issuer: realmUrl,
          audience: 'rights-api',
          claims: KEYCLOAK_CLAIMS,
          scopeMap: { 'rights-reader': ['id.user.right.read'] },
          clients: ['acme'],
          staff: { read: 'rights-support', write: 'rights-support-write', grantor: 'grantor', grantors: ['acme'] },
        },
      ]),
      CONSOLE_ISSUER: realmUrl,
      CONSOLE_CLIENT_ID: 'rights-console',
    },
  });
  await keycloak.createRealm(realm(`${system.gatewayUrl}/console`));
  await system.seed({
    clients: [{ clientId: 'acme', grantorId: 'acme' }],
    users: ['alice', 'bob'],
    skus: { minutes: { grantorIds: ['acme'] } },
  });
  // The realm exists only now: the gateway, which found no realm at its start, tries again every
  // few seconds, answering its tokens 503 meanwhile.
  const { access_token } = await tokenOf({
    grant_type: 'client_credentials',
    client_id: 'acme',
    client_secret: ACME_SECRET,
  });
  await vi.waitFor(async () => expect((await call('GET', '/id/users/alice', access_token!)).status).not.toBe(503), {
    timeout: 30_000,
    interval: 250,
  });
}, 300_000);
afterAll(async () => {
  await system?.stop();
  await keycloak?.stop();
});

async function tokenOf(form: Record<string, string>): Promise<Record<string, string>> {
  const answer = await fetch(`${realmUrl}/protocol/openid-connect/token`, {
    method: 'POST',
    body: new URLSearchParams(form),
  });
  const body = (await answer.json()) as Record<string, string>;
  expect(answer.status, JSON.stringify(body)).toBe(200);
  return body;
}
const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  system.call(method, path, `Bearer ${token}`, body, headers);

describe('Keycloak as it ships (docs/identity-providers.md)', () => {
  it('when the acme client’s service account takes a token (client credentials), then it acts as its client on any acme user, within its scopes', async () => {
    const access_token = (
      await tokenOf({ grant_type: 'client_credentials', client_id: 'acme', client_secret: ACME_SECRET })
    ).access_token!;
    // Keycloak's shape: the client in `azp`, the service account's user name, a UUID for `sub`.
    const claims = decodeJwt(access_token);
    expect(claims).toMatchObject({ iss: realmUrl, azp: 'acme', preferred_username: 'service-account-acme' });
    expect(claims.sub).toMatch(/^[0-9a-f-]{36}$/);
    for (const user of ['alice', 'bob'])
      expect((await call('GET', `/id/users/${user}/rights?grantorId=acme`, access_token)).status).toBe(200);
    const unscoped = await call('GET', '/id/users/alice/subs?grantorid=acme', access_token);
    expect([unscoped.status, unscoped.headers.get('www-authenticate')]).toEqual([
      401,
      'Bearer realm="rights", error="insufficient_scope", scope="id.user.sub.read"',
    ]);
  });

  it('when an agent signs in for openid profile only, then its token changes an acme right with a reason, the audit log names them, and the session’s refresh token gives another', async () => {
    const granted = await system.call('POST', '/id/users/alice/rights', TestSystem.clientAuthorization('acme'), {
      sku: 'minutes',
      grantorId: 'acme',
      timeInterval: `${new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z')}/P30D`,
      state: 'ACTIVE',
      quantity: 10,
    });
    const { rightId } = (await granted.json()) as { rightId: string };
    const signedIn = await tokenOf({
      grant_type: 'password',
      client_id: 'rights-console',
      username: 'agnes',
      password: 'agnes-password',
      scope: 'openid profile',
    });
    expect(signedIn.refresh_token).toEqual(expect.any(String));
    expect(signedIn.scope).not.toContain('offline_access');
    const adjusted = await call(
      'POST',
      `/id/users/alice/rights/${rightId}/adjustments`,
      signedIn.access_token!,
      { amount: 5 },
      { 'x-audit-reason': 'goodwill' },
    );
    expect(adjusted.status, adjusted.headers.get('www-authenticate') ?? '').toBe(200);
    await vi.waitFor(
      async () => {
        const log = (await (
          await system.call('GET', '/admin/audit?grantorId=acme', system.adminHeaders().authorization!)
        ).json()) as { entries: AuditEntry[] };
        expect(log.entries).toContainEqual(
          expect.objectContaining({
            actor: expect.objectContaining({ kind: 'staff', issuer: realmUrl, name: 'Agnes Example' }),
            reason: 'goodwill',
            status: 200,
          }),
        );
      },
      { timeout: 10_000, interval: 250 },
    );
    const refreshed = await tokenOf({
      grant_type: 'refresh_token',
      client_id: 'rights-console',
      refresh_token: signedIn.refresh_token!,
    });
    expect(refreshed.access_token).not.toBe(signedIn.access_token);
    expect((await call('GET', `/id/users/alice/rights/${rightId}`, refreshed.access_token!)).status).toBe(200);
  });

  it('when the agent signs in to the console through Keycloak’s own pages, then the console shows the find page', async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      const scopes: string[] = [];
      page.on('request', (request) => {
        if (request.url().startsWith(`${realmUrl}/protocol/openid-connect/auth?`))
          scopes.push(new URL(request.url()).searchParams.get('scope') ?? '');
      });
      await page.goto(`${system.gatewayUrl}/console`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.origin === keycloak.url);
      await page.locator('#username').fill('agnes');
      await page.locator('#password').fill('agnes-password');
      await page.locator('#kc-login').click();
      await page.waitForURL((url) => url.origin === system.gatewayUrl);
      await expect.poll(() => page.getByRole('heading', { name: 'Find a user' }).count(), { timeout: 15_000 }).toBe(1);
      expect(scopes).toEqual(['openid profile']);
    } finally {
      await browser.close();
    }
  });
});
