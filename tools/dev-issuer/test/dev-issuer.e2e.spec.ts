import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import { freePort, TestSystem } from '@rs/testing';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const root = path.resolve(__dirname, '../../..');
const MAIN = path.join(root, 'tools/dev-issuer/dist/main.js');

const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** The issuer as `npm start` runs it, on its own port. */
async function startIssuer(env: Record<string, string>) {
  const port = await freePort();
  const { NODE_ENV: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, [MAIN], {
    env: { ...inherited, DEV_ISSUER_PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, port, output: () => output };
}

/** What `npm start` would run in this environment (`scripts/start.mjs --plan`). */
function planOf(env: Record<string, string>) {
  const { NODE_ENV: _n, JWT_JWKS_URL: _j, JWT_PUBLIC_KEY: _k, ADMIN_CLIENT_ID: _a, ...inherited } = process.env;
  const result = spawnSync(process.execPath, [path.join(root, 'scripts/start.mjs'), '--plan'], {
    env: { ...inherited, ...env },
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { nodeEnv: string; devIssuer: { url: string } | null; services: string[] };
}

describe('the development token issuer is absent in production', () => {
  it('when NODE_ENV is production, then the issuer refuses to start and nothing listens on its port', async () => {
    const issuer = await startIssuer({ NODE_ENV: 'production' });
    const [code] = await once(issuer.child, 'exit');
    expect(code).toBe(1);
    expect(issuer.output()).toContain('never runs when NODE_ENV is production');
    expect(await answers(issuer.port)).toBe(false);
  });

  it('when NODE_ENV is unset, then it refuses too (unset means production for every service)', async () => {
    const issuer = await startIssuer({});
    const [code] = await once(issuer.child, 'exit');
    expect(code).toBe(1);
    expect(await answers(issuer.port)).toBe(false);
  });

  it('when `npm start` plans a production system, then the issuer is not part of it; in development it is', () => {
    // Nor is the well-known admin client `npm start` makes up for development.
    expect(planOf({ NODE_ENV: 'production' })).toMatchObject({
      nodeEnv: 'production',
      devIssuer: null,
      defaultAdminClient: null,
    });
    expect(planOf({})).toMatchObject({
      nodeEnv: 'development',
      devIssuer: { url: 'http://localhost:8090' },
      defaultAdminClient: 'admin',
    });
    expect(planOf({ JWT_JWKS_URL: 'https://idp.example/jwks.json' }).devIssuer).toBeNull();
  });
});

describe('Bearer tried with the development issuer', () => {
  let issuer: Awaited<ReturnType<typeof startIssuer>>;
  let issuerUrl: string;
  let system: TestSystem;
  const token = async (fields: Record<string, string>) =>
    fetch(`${issuerUrl}/dev/token`, { method: 'POST', body: new URLSearchParams(fields) });
  const bearerGet = (path: string, accessToken: string) =>
    fetch(`${system.gatewayUrl}${path}`, { headers: { authorization: `Bearer ${accessToken}` } });

  beforeAll(async () => {
    issuer = await startIssuer({
      NODE_ENV: 'development',
      JWT_ISSUER: 'http://issuer.localhost',
      JWT_AUDIENCE: 'rights-api',
    });
    issuerUrl = `http://127.0.0.1:${issuer.port}`;
    await vi.waitFor(
      async () => {
        if (!(await answers(issuer.port))) throw new Error(`the issuer did not start: ${issuer.output()}`);
      },
      { timeout: 10_000, interval: 50 },
    );
    // The gateway trusts it as `npm start` configures it: through its JWKS, like a real provider's.
    system = await TestSystem.start({
      name: 'dev-issuer',
      backends: ['catalog', 'rights'],
      env: {
        JWT_JWKS_URL: `${issuerUrl}/.well-known/jwks.json`,
        JWT_ISSUER: 'http://issuer.localhost',
        JWT_AUDIENCE: 'rights-api',
      },
    });
    await system.seed({
      clients: [{ clientId: 'acme', grantorId: 'acme' }],
      users: ['alice', 'bob'],
      skus: { news: {} },
    });
  });
  afterAll(async () => {
    issuer?.child.kill('SIGTERM');
    await system?.stop();
  });

  it('when a token is asked for a user, a client and a scope, then it is an RFC 9068 access token verifiable with the published JWKS', async () => {
    const response = await token({ user: 'alice', client: 'acme', scope: 'id.user.right.read', expires_in: '600' });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as {
      access_token: string;
      token_type: string;
      expires_in: number;
      scope: string;
    };
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 600, scope: 'id.user.right.read' });
    expect(decodeProtectedHeader(body.access_token)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    const { payload } = await jwtVerify(
      body.access_token,
      createRemoteJWKSet(new URL(`${issuerUrl}/.well-known/jwks.json`)),
      {
        issuer: 'http://issuer.localhost',
        audience: 'rights-api',
        typ: 'at+jwt',
      },
    );
    expect(payload).toMatchObject({ sub: 'alice', client_id: 'acme', scope: 'id.user.right.read' });
    expect(payload.exp! - payload.iat!).toBe(600);
    expect(typeof payload.jti).toBe('string');
  });

  it("when the gateway gets its token, then Bearer works: the user's rights are listed, and only with the right scope and user", async () => {
    const created = await system.call('POST', '/id/users/alice/rights', TestSystem.clientAuthorization('acme'), {
      grantorId: 'acme',
      sku: 'news',
      timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z',
    });
    expect(created.status).toBe(201);
    const { access_token: read } = (await (
      await token({ user: 'alice', client: 'acme', scope: 'id.user.right.read' })
    ).json()) as { access_token: string };

    const listed = await bearerGet('/id/users/alice/rights?grantorId=acme', read);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { right: unknown[] }).right).toHaveLength(1);
    // Another user's path, and a scope the token lacks: the gateway's Bearer rules apply.
    expect((await bearerGet('/id/users/bob/rights?grantorId=acme', read)).headers.get('www-authenticate')).toContain(
      'token not issued for this user',
    );
    const subscriptions = await bearerGet('/id/users/alice/subs?grantorid=acme', read);
    expect(subscriptions.status).toBe(401);
    expect(subscriptions.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
  });

  it('when the request names an unknown scope, misses the user, or is not a form or JSON, then it is refused with a reason', async () => {
    const unknownScope = await token({ user: 'alice', client: 'acme', scope: 'admin' });
    expect(unknownScope.status).toBe(400);
    expect(await unknownScope.json()).toMatchObject({ error: 'invalid_scope' });
    const noUser = await token({ client: 'acme', scope: 'id.user.right.read' });
    expect(noUser.status).toBe(400);
    expect(await noUser.json()).toMatchObject({
      error: 'invalid_request',
      error_description: expect.stringMatching(/^user: /),
    });
    const text = await fetch(`${issuerUrl}/dev/token`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.status).toBe(415);
    expect((await fetch(`${issuerUrl}/dev/token`)).status).toBe(405);
  });
});
