import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort, TestSystem } from '@rs/testing';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/identity-providers.md "Locally": the development issuer is a real OpenID Provider. The
// console's sign-in (authorization code with PKCE, then refresh), an API client's own tokens
// (client credentials) and the gateway trusting it as it would any provider, staff included.
const root = path.resolve(__dirname, '../../..');
const REDIRECT = 'http://127.0.0.1:1/console/';
let issuerUrl: string;
let system: TestSystem;
let stopIssuer: () => void;

beforeAll(async () => {
  const port = await freePort();
  issuerUrl = `http://127.0.0.1:${port}`;
  const { NODE_ENV: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, [path.join(root, 'tools/dev-issuer/dist/main.js')], {
    env: {
      ...inherited,
      NODE_ENV: 'development',
      DEV_ISSUER_PORT: String(port),
      JWT_ISSUER: issuerUrl,
      JWT_AUDIENCE: 'rights-api',
      CONSOLE_REDIRECT_URIS: REDIRECT,
    },
    stdio: 'ignore',
  });
  stopIssuer = () => child.kill('SIGTERM');
  await vi.waitFor(async () => expect((await fetch(`${issuerUrl}/healthz`)).status).toBe(200), {
    timeout: 15_000,
    interval: 100,
  });
  // The gateway trusts it by discovery, as `npm start` sets it up.
  system = await TestSystem.start({
    name: 'openid_provider',
    backends: ['catalog', 'rights'],
    env: {
      AUTH_ISSUERS: JSON.stringify([
        {
          issuer: issuerUrl,
          audience: 'rights-api',
          claims: { roles: 'roles' },
          clients: '*',
          staff: {
            read: 'rights-support',
            write: 'rights-support-write',
            admin: 'rights-admin',
            grantor: 'grantor',
            grantors: ['*'],
          },
        },
      ]),
    },
  });
  await system.seed({ clients: [{ clientId: 'acme', grantorId: 'acme' }], users: ['alice'], skus: { news: {} } });
});
afterAll(async () => {
  stopIssuer?.();
  await system?.stop();
});

/** A browser's cookies for the provider, kept across the sign-in's redirects. */
class Browser {
  private readonly cookies = new Map<string, string>();

  async go(url: string, form?: Record<string, string>): Promise<Response> {
    const response = await fetch(new URL(url, issuerUrl), {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form) } : {}),
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const [name, ...value] = pair!.split('=');
      this.cookies.set(name!, value.join('='));
    }
    return response;
  }
}

/** Signs `login` in through the provider's pages as the console does; the code it is given back. */
async function signIn(login: string, challenge: string): Promise<string> {
  const browser = new Browser();
  const query = new URLSearchParams({
    client_id: 'rights-console',
    response_type: 'code',
    redirect_uri: REDIRECT,
    // As the console asks: no offline token, the session's refresh token all the same.
    scope: 'openid profile',
    prompt: 'consent',
    state: 'st4te',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  let location = `/auth?${query}`;
  for (let step = 0; step < 10; step++) {
    if (location.startsWith(REDIRECT)) {
      const back = new URL(location);
      expect(back.searchParams.get('state')).toBe('st4te');
      return back.searchParams.get('code')!;
    }
    let response = await browser.go(location);
    if (response.status === 200) {
      // A page of the provider: the login form, then the consent.
      const page = await response.text();
      const action = /action="([^"]+)"/.exec(page)![1]!;
      const form: Record<string, string> = page.includes('name="login"')
        ? { prompt: 'login', login, password: 'any' }
        : { prompt: 'consent' };
      response = await browser.go(action, form);
    }
    expect([302, 303], await response.clone().text()).toContain(response.status);
    location = response.headers.get('location')!;
  }
  throw new Error('the sign-in did not come back to the console');
}

const tokenRequest = async (form: Record<string, string>, authorization?: string) => {
  const response = await fetch(`${issuerUrl}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(authorization ? { authorization } : {}),
    },
    body: new URLSearchParams(form),
  });
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as { access_token: string; refresh_token?: string };
};

async function consoleTokens(login: string) {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const code = await signIn(login, challenge);
  return tokenRequest({
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    client_id: 'rights-console',
    code_verifier: verifier,
  });
}

/** A call of the gateway; a staff member says why they change anything (docs/audit.md). */
const gateway = (pathname: string, token: string, method = 'GET') =>
  fetch(`${system.gatewayUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(method === 'GET' ? {} : { 'x-audit-reason': 'a test' }) },
  });

describe('the development OpenID Provider', () => {
  it('when it is asked for its configuration, then discovery names its endpoints, PKCE by S256 and its keys', async () => {
    const discovery = (await (await fetch(`${issuerUrl}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(discovery).toMatchObject({
      issuer: issuerUrl,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']),
    });
    const keys = (await (await fetch(String(discovery.jwks_uri))).json()) as { keys: Array<{ kid: string }> };
    const legacy = (await (await fetch(`${issuerUrl}/.well-known/jwks.json`)).json()) as {
      keys: Array<{ kid: string }>;
    };
    expect(keys.keys.map((key) => key.kid)).toEqual(legacy.keys.map((key) => key.kid));
  });

  it('when the acme agent signs in to the console with PKCE, then its token reads and suspends a right of an acme user, and its refresh token gives another', async () => {
    const created = await system.call('POST', '/id/users/alice/rights', TestSystem.clientAuthorization('acme'), {
      grantorId: 'acme',
      sku: 'news',
      timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z',
    });
    const { rightId } = (await created.json()) as { rightId: string };
    const right = `/id/users/alice/rights/${rightId}`;

    const agent = await consoleTokens('acme-agent');
    expect(decodeJwt(agent.access_token)).toMatchObject({
      sub: 'acme-agent',
      client_id: 'rights-console',
      aud: 'rights-api',
      roles: ['rights-support-write'],
      grantor: ['acme'],
    });
    expect((await gateway(right, agent.access_token)).status).toBe(200);
    expect((await gateway(`${right}/suspend`, agent.access_token, 'POST')).status).toBe(204);

    const reader = await consoleTokens('acme-reader');
    expect((await gateway(right, reader.access_token)).status).toBe(200);
    expect((await gateway(`${right}/activate`, reader.access_token, 'POST')).status).toBe(401);

    const refreshed = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: agent.refresh_token!,
      client_id: 'rights-console',
    });
    expect(refreshed.access_token).not.toBe(agent.access_token);
    expect((await gateway(`${right}/activate`, refreshed.access_token, 'POST')).status).toBe(204);
  });

  it('when the sign-in skips PKCE, then the provider refuses it', async () => {
    const query = new URLSearchParams({
      client_id: 'rights-console',
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid',
    });
    const response = await fetch(`${issuerUrl}/auth?${query}`, { redirect: 'manual' });
    expect(new URL(response.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
  });

  it('when an API client asks for its own token (client credentials), then it acts as that client within its scopes', async () => {
    const { access_token: token } = await tokenRequest(
      { grant_type: 'client_credentials', scope: 'id.user.right.read' },
      `Basic ${Buffer.from('acme:acme-secret-0123').toString('base64')}`,
    );
    expect(decodeJwt(token)).toMatchObject({ sub: 'acme', client_id: 'acme', scope: 'id.user.right.read' });
    expect((await gateway('/id/users/alice/rights?grantorId=acme', token)).status).toBe(200);
    expect((await gateway('/id/users/alice/subs?grantorid=acme', token)).status).toBe(401);
  });
});
