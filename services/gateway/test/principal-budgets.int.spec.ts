import { systemFixture, TestSystem, clientsOf } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Budgets and Idempotency-Keys belong to one principal (docs/security.md "Budgets"): a Basic
 * client's own, each (client, user) pair of Bearer calls apart from it, and each source
 * address on the open routes. A user's app spends neither its grantor's budget nor its keys.
 */
const fx = systemFixture({
  name: 'gateway_budgets',
  backends: ['catalog', 'rights'],
  bearer: true,
  env: {
    RATE_LIMIT_PER_SECOND: '0.2',
    RATE_LIMIT_BURST: '20',
    RATE_LIMIT_USER_PER_SECOND: '0.2',
    RATE_LIMIT_USER_BURST: '3',
    RATE_LIMIT_OPEN_PER_SECOND: '0.2',
    RATE_LIMIT_OPEN_BURST: '3',
  },
  seed: {
    clients: clientsOf({ acme: 'A', shop: 'A', keys: 'A' }),
    users: ['alice', 'bob', 'carol'],
    skus: { news: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const bearer = async (clientId: string, user: string, scope = 'id.user.right.read id.user.right.use') =>
  `Bearer ${await fx.issuer.token(clientId, user, { scope })}`;
const statuses = async (count: number, call: () => Promise<Response>) => {
  const seen: number[] = [];
  for (let i = 0; i < count; i += 1) seen.push((await call()).status);
  return seen;
};

describe('budgets per principal', () => {
  it("when a user's app spends its whole budget, then its next call is 429 per-user, and its grantor's own client calls are untouched", async () => {
    const token = await bearer('acme', 'alice');
    const own = TestSystem.clientAuthorization('acme');
    const app = await statuses(4, () => fx.call('GET', '/id/users/alice', token));
    expect(app).toEqual([200, 200, 200, 429]);
    const limited = await fx.call('GET', '/id/users/alice', token);
    expect(limited.headers.get('ratelimit')).toMatch(/^"per-user";r=0;t=\d+$/);
    expect(limited.headers.get('ratelimit-policy')).toBe('"per-user";q=3;w=15');
    // The same client's app for another user has a budget of its own, and so has the client.
    expect(
      await statuses(3, () => bearer('acme', 'bob').then((other) => fx.call('GET', '/id/users/bob', other))),
    ).toEqual([200, 200, 200]);
    const client = await statuses(3, () => fx.call('GET', '/id/users/alice', own));
    expect(client).toEqual([200, 200, 200]);
    expect((await fx.call('GET', '/id/users/alice', own)).headers.get('ratelimit-policy')).toBe(
      '"per-client";q=20;w=100',
    );
  });

  it('when one address floods an open route, then it gets 429 per-address, and authenticated callers are untouched', async () => {
    const open = await statuses(4, () => fetch(`${fx.system.gatewayUrl}/.well-known/jwks.json`));
    expect(open).toEqual([200, 200, 200, 429]);
    const limited = await fetch(`${fx.system.gatewayUrl}/openapi.json`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('ratelimit')).toMatch(/^"per-address";r=0;t=\d+$/);
    expect(limited.headers.get('content-type')).toMatch(/^text\/plain/);
    expect((await fx.call('GET', '/id/users/carol', TestSystem.clientAuthorization('shop'))).status).toBe(200);
  });
});

describe('Idempotency-Keys per principal', () => {
  it("when a user's app and its grantor's client use the same key, then each request runs as its own", async () => {
    const client = TestSystem.clientAuthorization('keys');
    const start = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const created = await fx.call('POST', '/id/users/carol/rights', client, {
      sku: 'news',
      grantorId: 'A',
      timeInterval: `${start}/P1D`,
      state: 'ACTIVE',
    });
    const { rightId } = (await created.json()) as { rightId: string };
    const send = (authorization: string, path: string, body: object) =>
      fetch(`${fx.system.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', 'idempotency-key': 'order-8262' },
        body: JSON.stringify(body),
      });
    const usage = await send(await bearer('keys', 'carol'), `/id/users/carol/rights/${rightId}/usage`, {});
    expect(usage.status).toBe(204);
    const create = await send(client, '/id/users/carol/rights', {
      sku: 'news',
      grantorId: 'A',
      timeInterval: `${start}/P2D`,
    });
    expect(create.status).toBe(201);
    expect(create.headers.get('idempotent-replayed')).toBeNull();
    // Each owner's key still replays its own answer.
    const again = await send(client, '/id/users/carol/rights', {
      sku: 'news',
      grantorId: 'A',
      timeInterval: `${start}/P2D`,
    });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });
});
