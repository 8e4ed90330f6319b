import { TestSystem, TokenIssuer } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let issuer: TokenIssuer;
let system: TestSystem;

beforeAll(async () => {
  issuer = new TokenIssuer();
  await issuer.start();
  issuer.mode = 'slow'; // the identity provider's key set hangs from the start
  system = await TestSystem.start({
    name: 'gateway_limits',
    backends: ['catalog'],
    env: { ...issuer.env, RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3' },
  });
  expect(
    (await fetch(`${system.gatewayUrl}/id/users/alice`, { method: 'PUT', headers: system.adminHeaders() })).status,
  ).toBe(201);
  expect(
    (
      await fetch(`${system.gatewayUrl}/admin/clients/app`, {
        method: 'PUT',
        headers: system.adminHeaders({ 'content-type': 'application/json' }),
        body: JSON.stringify({ secret: 'secret-of-the-app', grantorId: 'A' }),
      })
    ).status,
  ).toBe(201);
});
afterAll(async () => {
  await system?.stop();
  await issuer?.close();
});

describe('rate limiting per client', () => {
  it('when a client exceeds its rate, then 429 with Retry-After and the RateLimit fields', async () => {
    const authorization = `Basic ${Buffer.from('app:secret-of-the-app').toString('base64')}`;
    const responses: Response[] = [];
    for (let i = 0; i < 4; i++)
      responses.push(await fetch(`${system.gatewayUrl}/id/users/alice`, { headers: { authorization } }));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(responses[0]!.headers.get('ratelimit-policy')).toBe('"per-client";q=3;w=3');
    expect(responses[0]!.headers.get('ratelimit')).toMatch(/^"per-client";r=2;t=\d+$/);
    const limited = responses[3]!;
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('ratelimit')).toMatch(/^"per-client";r=0;t=\d+$/);
    expect(limited.headers.get('content-type')).toMatch(/^text\/plain/);
  });
});

describe('an identity provider that is down or slow', () => {
  it('when the key set does not answer from the start, then Bearer calls get 503 with Retry-After quickly, and work once it is back (docs/identity-providers.md)', async () => {
    const token = await issuer.token('app', 'alice');
    const started = Date.now();
    const response = await fetch(`${system.gatewayUrl}/id/users/alice`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect([response.status, response.headers.get('retry-after')]).toEqual([503, expect.stringMatching(/^\d+$/)]);
    issuer.mode = 'down';
    const down = await fetch(`${system.gatewayUrl}/id/users/alice`, { headers: { authorization: `Bearer ${token}` } });
    expect(down.status).toBe(503);
    issuer.mode = 'up';
    await expect
      .poll(
        async () =>
          (await fetch(`${system.gatewayUrl}/id/users/alice`, { headers: { authorization: `Bearer ${token}` } }))
            .status,
      )
      .toBe(200);
  });
});
