import { systemFixture, TestSystem, clientsOf } from '@rs/testing';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Signed right tokens through the gateway (docs/api.md): a service provider verifies a right
// offline, with `jose`, against the keys the gateway publishes.

const TTL_S = 120;
const A = TestSystem.clientAuthorization('grantor-a');
const B = TestSystem.clientAuthorization('grantor-b');
const SP = TestSystem.clientAuthorization('provider-sp');
const fx = systemFixture({
  name: 'right_tokens',
  backends: ['catalog', 'rights'],
  bearer: true,
  env: { RIGHT_TOKEN_TTL_S: String(TTL_S) },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B', 'provider-sp': 'SP', 'app-a': 'A' }),
    users: ['alice'],
    skus: { news: { serviceProviderId: 'SP', grantorIds: ['A', 'B'] } },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
async function createRight(
  state: string,
  timeInterval = `${iso(-60_000)}/${iso(86_400_000)}`,
  more: Record<string, unknown> = {},
): Promise<string> {
  const response = await fx.call('POST', '/id/users/alice/rights', A, {
    sku: 'news',
    grantorId: 'A',
    serviceProviderId: 'SP',
    timeInterval,
    state,
    ...more,
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { rightId: string }).rightId;
}
const tokenOf = (rightId: string, authorization = SP) =>
  fx.call('GET', `/id/users/alice/rights/${rightId}/token`, authorization);
async function jwks(): Promise<JSONWebKeySet> {
  const response = await fetch(`${fx.system.gatewayUrl}/.well-known/jwks.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
  return (await response.json()) as JSONWebKeySet;
}
const verify = async (token: string) =>
  jwtVerify(token, createLocalJWKSet(await jwks()), {
    issuer: fx.system.gatewayUrl,
    typ: 'right+jwt',
    algorithms: ['ES256'],
  });

describe('signed right tokens (docs/api.md)', () => {
  it('when a fresh deployment starts, then the JWKS already holds a key, before any token is asked for', async () => {
    // This file's system started on new databases, and nothing above asked for a token.
    const published = await jwks();
    expect(published.keys).toHaveLength(1);
    expect(published.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', use: 'sig', alg: 'ES256' });
    const rightId = await createRight('ACTIVE');
    expect(decodeProtectedHeader(await (await tokenOf(rightId)).text()).kid).toBe(published.keys[0]!.kid);
  });

  it('when a reader of an active right asks, then it gets an ES256 right+jwt that verifies with the published keys', async () => {
    const rightId = await createRight('ACTIVE');
    const response = await tokenOf(rightId);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/jwt/);
    const token = await response.text();
    const { payload, protectedHeader } = await verify(token);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'right+jwt' });
    expect(payload).toMatchObject({
      iss: fx.system.gatewayUrl,
      sub: 'alice',
      rid: rightId,
      sku: 'news',
      grantorId: 'A',
      serviceProviderId: 'SP',
      generation: '1',
      used: false,
      quantity: null,
      remaining: null,
    });
    expect(typeof payload.jti).toBe('string');
    // The lifetime is capped by RIGHT_TOKEN_TTL_S, and starts with the interval.
    expect(payload.exp! - payload.iat!).toBe(TTL_S);
    expect(payload.nbf).toBeLessThanOrEqual(payload.iat!);
  });

  it('when the right is metered, then its token carries its quantity and what remained when it was issued', async () => {
    const rightId = await createRight('ACTIVE', undefined, { quantity: 10 });
    expect((await fx.call('POST', `/id/users/alice/rights/${rightId}/usage`, SP, { amount: 3 })).status).toBe(204);
    const { payload } = await verify(await (await tokenOf(rightId)).text());
    expect(payload).toMatchObject({ quantity: 10, remaining: 7, used: true, generation: '2' });
  });

  it('when the interval ends before the token lifetime, then the token expires with the right', async () => {
    const end = Math.floor(Date.now() / 1000) * 1000 + 30_000;
    const rightId = await createRight('ACTIVE', `${iso(-60_000)}/${new Date(end).toISOString()}`);
    const { payload } = await verify(await (await tokenOf(rightId)).text());
    expect(payload.exp).toBe(end / 1000);
  });

  it('when a Bearer token with id.user.right.read asks for its user, then it gets the token', async () => {
    const rightId = await createRight('ACTIVE');
    const bearer = await fx.issuer.token('app-a', 'alice', { scope: 'id.user.right.read' });
    const response = await tokenOf(rightId, `Bearer ${bearer}`);
    expect(response.status).toBe(200);
    expect((await verify(await response.text())).payload.rid).toBe(rightId);
  });

  it('when the right is not active, unknown, or not the caller’s to read, then 409 text/plain or 404 text/html', async () => {
    const created = await createRight('CREATED');
    const notActive = await tokenOf(created);
    expect(notActive.status).toBe(409);
    expect(notActive.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await notActive.text()).toMatch(/not active/);
    const unknown = await tokenOf('01NOSUCHRIGHT0000000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/^text\/html/);
    const active = await createRight('ACTIVE');
    expect((await tokenOf(active, B)).status).toBe(404);
  });

  it('when an admin starts a new key, then new tokens use it, and tokens of the old key still verify; others may not rotate', async () => {
    const rightId = await createRight('ACTIVE');
    const before = await (await tokenOf(rightId)).text();
    const refused = await fx.call('POST', '/admin/right-token-keys', A);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Basic /);

    const rotated = await fx.call('POST', '/admin/right-token-keys', fx.system.adminHeaders().authorization!);
    expect(rotated.status).toBe(201);
    const { kid } = (await rotated.json()) as { kid: string };
    expect(decodeProtectedHeader(before).kid).not.toBe(kid);

    const after = await (await tokenOf(rightId)).text();
    expect(decodeProtectedHeader(after).kid).toBe(kid);
    const published = await jwks();
    expect(published.keys.map((key) => key.kid)).toEqual(
      expect.arrayContaining([kid, decodeProtectedHeader(before).kid]),
    );
    for (const key of published.keys) {
      expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', use: 'sig', alg: 'ES256' });
      expect(key).not.toHaveProperty('d');
    }
    expect((await verify(before)).payload.rid).toBe(rightId);
    expect((await verify(after)).payload.rid).toBe(rightId);
  });

  it('when the rights service restarts, then it signs with the same key; the private key is stored only encrypted', async () => {
    const rightId = await createRight('ACTIVE');
    const kid = decodeProtectedHeader(await (await tokenOf(rightId)).text()).kid;
    await fx.system.service('rights').stop();
    await fx.system.service('rights').start();
    expect(decodeProtectedHeader(await (await tokenOf(rightId)).text()).kid).toBe(kid);

    const db = await mongoose.createConnection(fx.system.mongoUrlFor('rights')).asPromise();
    try {
      const stored = await db.db!.collection('right_token_keys').find().toArray();
      expect(stored.length).toBeGreaterThan(0);
      for (const doc of stored) {
        expect(JSON.stringify(doc)).not.toMatch(/"d":/);
        expect(doc.sealed).toMatchObject({ iv: expect.any(String), tag: expect.any(String), data: expect.any(String) });
      }
    } finally {
      await db.close();
    }
  });
});
