import { systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * docs/api.md "No lock-out", behind an ingress: the test's connections come from loopback,
 * a trusted proxy, and each caller's address is the one its X-Forwarded-For names.
 */
const fx = systemFixture({
  name: 'gateway_lockout',
  backends: [],
  env: { TRUSTED_PROXIES: '127.0.0.1, ::1', RATE_LIMIT_PER_SECOND: '0' },
  seed: {
    clients: [
      { clientId: 'verified', grantorId: 'A' },
      { clientId: 'newcomer', grantorId: 'B' },
    ],
    users: ['alice'],
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const ATTACKER = '203.0.113.66';
const from = (address: string, authorization: string) =>
  fetch(`${fx.system.gatewayUrl}/id/users/alice`, { headers: { authorization, 'x-forwarded-for': address } });
const wrongSecret = (i: number) => `Basic ${Buffer.from(`verified:wrong-secret-${i}`).toString('base64')}`;

async function invalidVerifications(): Promise<number> {
  const metrics = await (await fetch(fx.system.service('gateway').metricsUrl)).text();
  return Number(/^gateway_secret_verifications_total\{[^}]*outcome="invalid"[^}]*\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
}

describe('a flood of wrong secrets (docs/api.md "No lock-out")', () => {
  it('when 300 wrong secrets arrive at once from one address, then a verified client sees no error, a client behind the same proxy at another address gets in, and few hashes are computed', async () => {
    expect((await from('198.51.100.1', TestSystem.clientAuthorization('verified'))).status).toBe(200);
    const hashedBefore = await invalidVerifications();

    const flood = Promise.all(Array.from({ length: 300 }, (_, i) => from(ATTACKER, wrongSecret(i))));
    const verified = Promise.all(
      Array.from({ length: 50 }, () => from('198.51.100.1', TestSystem.clientAuthorization('verified'))),
    );
    // Its first verification takes its turn beside the flood's (HashLanes), and is not refused.
    const newcomer = await from('198.51.100.2', TestSystem.clientAuthorization('newcomer'));

    const flooded = (await flood).map((response) => response.status);
    expect((await verified).map((response) => response.status)).toEqual(Array(50).fill(200));
    expect(newcomer.status).toBe(200);
    // Counted before the hash: past the free attempts, the flood is refused without one.
    expect(flooded.filter((status) => status === 429).length).toBeGreaterThanOrEqual(290);
    expect(flooded.every((status) => status === 401 || status === 429)).toBe(true);
    expect((await invalidVerifications()) - hashedBefore).toBeLessThanOrEqual(10);
    // The verified client keeps working from the flooding address too: it is never throttled.
    expect((await from(ATTACKER, TestSystem.clientAuthorization('verified'))).status).toBe(200);
  });
});
