import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemFixture, TestSystem, clientsOf } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// Through the gateway: the contract's last gaps (docs/behaviours.md), no lock-out, the
// single flight of verifications and lookups, and changes seen on every gateway replica.

const CACHE_TTL_MS = 400;
const BASIC_CHALLENGE = 'Basic realm="rights", charset="UTF-8"';

const A = TestSystem.clientAuthorization('grantor-a');
const B = TestSystem.clientAuthorization('grantor-b');

const gatewayUrl = (replica = 1) => fx.system.service(replica === 1 ? 'gateway' : `gateway#${replica}`).url;

function call(
  method: string,
  path: string,
  authorization?: string,
  options: { body?: unknown; headers?: Record<string, string>; replica?: number } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...(authorization ? { authorization } : {}), ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${gatewayUrl(options.replica)}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    redirect: 'manual',
  });
}

/** A GET sent from another loopback address (127.0.0.2): another caller's network address. */
function getFrom(localAddress: string, path: string, authorization: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${gatewayUrl()}${path}`);
    const request = http.get(
      { hostname: url.hostname, port: url.port, path: url.pathname, localAddress, headers: { authorization } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
  });
}

async function metric(name: string, labels: string, replica = 1): Promise<number> {
  const text = await (
    await fetch(fx.system.service(replica === 1 ? 'gateway' : `gateway#${replica}`).metricsUrl)
  ).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function putClient(clientId: string, secret: string, grantorId = 'A'): Promise<void> {
  const response = await call('PUT', `/admin/clients/${clientId}`, fx.system.adminHeaders().authorization, {
    body: { secret, grantorId },
  });
  expect([201, 204]).toContain(response.status);
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function createRight(grantor: string, authorization: string): Promise<string> {
  const response = await call('POST', '/id/users/alice/rights', authorization, {
    body: { sku: 'news', grantorId: grantor, timeInterval: `${new Date().toISOString()}/P30D`, state: 'ACTIVE' },
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { rightId: string }).rightId;
}

/** Remove (delete), activate and suspend of `path` by grantor B: 401, Basic challenge, text/html. */
async function expectMutationsRefused(path: string): Promise<void> {
  for (const [method, suffix] of [
    ['DELETE', ''],
    ['POST', '/activate'],
    ['POST', '/suspend'],
  ] as const) {
    const response = await call(method, `${path}${suffix}`, B);
    expect(response.status, `${method} ${suffix}`).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(BASIC_CHALLENGE);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  }
}

/** Polls until `check` holds; how long it took. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  await vi.waitFor(
    async () => {
      if (!(await check())) throw new Error(`not within ${limitMs} ms`);
    },
    { timeout: limitMs, interval: 50 },
  );
  return Date.now() - started;
}

const fx = systemFixture({
  processes: true,
  name: 'request_path',
  backends: ['catalog', 'rights', 'subscriptions'],
  replicas: { gateway: 2 },
  bearer: true,
  env: { AUTH_CACHE_TTL_MS: String(CACHE_TTL_MS) },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }),
    users: ['alice'],
    skus: { news: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

describe(`another grantor's resources (docs/api.md "Principals and authorization")`, () => {
  it("when a grantor removes, activates or suspends another grantor's right, then 401 with the Basic challenge; reading it stays 404", async () => {
    const rightId = await createRight('A', A);
    const path = `/id/users/alice/rights/${rightId}`;
    await expectMutationsRefused(path);
    expect((await call('GET', path, B)).status).toBe(404);
    // RFC 9457 bodies name the reason with a machine-readable code.
    const problem = await call('POST', `${path}/suspend`, B, { headers: { accept: 'application/problem+json' } });
    expect(problem.status).toBe(401);
    expect(problem.headers.get('www-authenticate')).toBe(BASIC_CHALLENGE);
    expect(await problem.json()).toMatchObject({ status: 401, code: 'not_permitted' });
    const missing = await call('GET', `${path}0`, A, { headers: { accept: 'application/problem+json' } });
    expect(await missing.json()).toMatchObject({ status: 404, code: 'not_found' });
    const unchanged = await call('GET', path, A);
    expect(await unchanged.json()).toMatchObject({ state: 'ACTIVE', generation: '1' });
  });

  it("when a grantor deletes, activates or suspends another grantor's subscription, then 401 with the Basic challenge; reading it stays 404", async () => {
    const created = await call('POST', '/id/users/alice/subs', A, {
      body: { grantorId: 'A', timeSpec: 'R/2026-01-31T00:00:00+01:00/P1M', rightsSpec: [{ sku: 'news' }] },
    });
    expect(created.status).toBe(201);
    const { subscriptionId } = (await created.json()) as { subscriptionId: string };
    const path = `/id/users/alice/subs/${subscriptionId}`;
    await expectMutationsRefused(path);
    expect((await call('GET', path, B)).status).toBe(404);
    expect(await (await call('GET', path, A)).json()).toMatchObject({ generation: '1' });
  });
});

describe('Bearer headers without a usable token (docs/api.md "Challenges")', () => {
  it('when the Bearer token is empty, then 401 with a Bearer challenge and no error code', async () => {
    for (const header of ['Bearer', 'Bearer ', 'bearer   ']) {
      const response = await call('GET', '/id/users/alice/rights?grantorId=A', header);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="rights"');
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });

  it('when the Bearer token cannot be parsed, then 401 with error="invalid_token"', async () => {
    for (const token of ['not-a-jwt', 'a.b', 'a.b.c.d.e.f', '%%%.%%%.%%%']) {
      const response = await call('GET', '/id/users/alice/rights?grantorId=A', `Bearer ${token}`);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="rights", error="invalid_token"/);
    }
  });

  it('when any Bearer header reaches a Basic-only endpoint, then the Basic challenge', async () => {
    const valid = await fx.issuer.token('grantor-a', 'alice', { scope: 'id.user.right.read' });
    for (const header of ['Bearer', 'Bearer garbage', `Bearer ${valid}`]) {
      for (const [method, path] of [
        ['POST', '/id/users/alice/rights'],
        ['GET', '/catalog/skus/news'],
        ['PUT', '/id/users/alice'],
        ['GET', '/admin/clients'],
      ] as const) {
        const response = await call(method, path, header);
        expect(response.status, `${method} ${path} with ${header.slice(0, 12)}`).toBe(401);
        expect(response.headers.get('www-authenticate')).toBe(BASIC_CHALLENGE);
      }
    }
  });
});

describe('content negotiation (docs/api.md)', () => {
  it('when Accept admits no JSON, then a JSON operation is 406 text/plain; JSON, wildcards and quality lists with JSON are served', async () => {
    const rightId = await createRight('A', A);
    const path = `/id/users/alice/rights/${rightId}`;
    for (const accept of ['text/html', 'application/xml, text/plain;q=0.5', 'application/json;q=0']) {
      const refused = await call('GET', path, A, { headers: { accept } });
      expect(refused.status, accept).toBe(406);
      expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    }
    const create = await call('POST', '/id/users/alice/rights', A, {
      headers: { accept: 'text/html' },
      body: { sku: 'news', grantorId: 'A', timeInterval: `${new Date().toISOString()}/P1D` },
    });
    expect(create.status).toBe(406);
    for (const accept of [
      undefined,
      '*/*',
      'application/*',
      'application/json',
      'application/problem+json',
      'text/html;q=0.9, application/json;q=0.1',
    ]) {
      const served = await call('GET', path, A, { headers: accept ? { accept } : {} });
      expect(served.status, String(accept)).toBe(200);
      expect(served.headers.get('content-type')).toMatch(/^application\/json/);
    }
    // An operation without a JSON body is not negotiated.
    expect((await call('POST', `${path}/suspend`, A, { headers: { accept: 'text/html' } })).status).toBe(204);
  });
});

describe('no lock-out', () => {
  it('when wrong secrets are sent for a client, then they are throttled, while its correct secret keeps working', async () => {
    await putClient('victim', 'the-victims-secret');
    const right = basic('victim', 'the-victims-secret');
    expect((await call('GET', '/id/users/alice', right)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++)
      statuses.push((await call('GET', '/id/users/alice', basic('victim', `guess-${i}`))).status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses).toContain(429);
    expect((await call('GET', '/id/users/alice', right)).status).toBe(200);
    // Its cache entries expire and refresh: still no 429 for the right secret.
    await sleep(3 * CACHE_TTL_MS); // the wait is the test's subject: past the caches' lifetime
    expect((await call('GET', '/id/users/alice', right)).status).toBe(200);
    // Guessing is still slowed: a block that ran out lets one guess be tried, then doubles.
    expect((await call('GET', '/id/users/alice', basic('victim', 'one-more-guess'))).status).toBe(401);
    const throttled = await call('GET', '/id/users/alice', basic('victim', 'and-another'));
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('when one address guesses a client it has never authenticated, then another address still gets in with the secret', async () => {
    await putClient('elsewhere', 'the-right-secret-elsewhere');
    for (let i = 0; i < 12; i++) await call('GET', '/id/users/alice', basic('elsewhere', `guess-${i}`));
    expect(await getFrom('127.0.0.2', '/id/users/alice', basic('elsewhere', 'the-right-secret-elsewhere'))).toBe(200);
  });
});

describe('single flight', () => {
  it('when 16 requests of a client arrive at once, before and after its cache entry expired, then its secret is verified once and the client looked up once per refresh', async () => {
    await putClient('burst', 'the-burst-secret');
    const authorization = basic('burst', 'the-burst-secret');
    const burst = async () => {
      const statuses = await Promise.all(
        Array.from({ length: 16 }, () => call('GET', '/id/users/alice', authorization).then((r) => r.status)),
      );
      expect(statuses).toEqual(Array(16).fill(200));
    };
    const verifications = () => metric('gateway_secret_verifications_total', 'outcome="valid"');
    const lookups = () => metric('gateway_directory_lookups_total', 'directory="clients"');

    const verifiedBefore = await verifications();
    await burst();
    expect(await verifications()).toBe(verifiedBefore + 1);

    await sleep(3 * CACHE_TTL_MS); // the wait is the test's subject: past fresh and stale, every entry of this client expired
    const lookupsBefore = await lookups();
    await burst();
    expect(await verifications()).toBe(verifiedBefore + 1);
    expect(await lookups()).toBe(lookupsBefore + 1);
  });
});

describe('changes seen on every gateway replica', () => {
  it('when a client is deleted through one replica, then the other refuses it within seconds', async () => {
    await putClient('short-lived', 'short-lived-secret');
    const authorization = basic('short-lived', 'short-lived-secret');
    expect((await call('GET', '/id/users/alice', authorization, { replica: 2 })).status).toBe(200);
    const deleted = await call('DELETE', '/admin/clients/short-lived', fx.system.adminHeaders().authorization);
    expect(deleted.status).toBe(204);
    expect((await call('GET', '/id/users/alice', authorization)).status).toBe(401);
    const took = await within(5_000, async () => {
      return (await call('GET', '/id/users/alice', authorization, { replica: 2 })).status === 401;
    });
    expect(took).toBeLessThan(2 * CACHE_TTL_MS + 1_000);
  });

  it('when a user is removed through one replica, then the other answers 404 for it within seconds', async () => {
    await call('PUT', '/id/users/leaving', fx.system.adminHeaders().authorization);
    expect((await call('GET', '/id/users/leaving/rights?grantorId=A', A, { replica: 2 })).status).toBe(200);
    expect((await call('DELETE', '/id/users/leaving', fx.system.adminHeaders().authorization)).status).toBe(204);
    const took = await within(5_000, async () => {
      return (await call('GET', '/id/users/leaving/rights?grantorId=A', A, { replica: 2 })).status === 404;
    });
    expect(took).toBeLessThan(2 * CACHE_TTL_MS + 1_000);
  });
});
