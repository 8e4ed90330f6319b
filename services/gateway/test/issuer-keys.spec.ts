import { createLogger } from '@rs/logging';
import { TokenIssuer } from '@rs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { BearerRejected, BearerVerifier } from '../src/auth/bearer';

// docs/identity-providers.md "How tokens are verified", Keys: a provider whose key set answers
// 500 for longer than the refresh interval changes nothing. The provider is a real HTTP server
// (libs/testing TokenIssuer); the refresh interval is short so that several refreshes fail.
const REFRESH_MS = 200;

let provider: TokenIssuer;
let verifier: BearerVerifier;
afterEach(async () => {
  verifier?.stop();
  await provider?.close();
});

async function started(): Promise<void> {
  provider = new TokenIssuer({ issuer: 'self', path: '/realms/acme' });
  await provider.start();
  verifier = new BearerVerifier({
    issuers: [
      {
        issuer: provider.issuer,
        audience: provider.audience,
        jwksUri: provider.jwksUrl,
        claims: { client: ['client_id'], user: 'sub', scopes: ['scope'] },
        scopeMap: {},
        clients: '*',
      },
    ],
    maxLifetimeSeconds: 86_400,
    logger: createLogger('issuer-keys-test', 'silent'),
    refreshMs: REFRESH_MS,
  });
  await verifier.start();
}

const userToken = (header: Record<string, unknown> = {}) =>
  provider.sign({ sub: 'alice', client_id: 'acme', scope: 'id.user.right.read' }, header);

describe('an identity provider’s keys through its outage', () => {
  it('when its key set answers 500 for longer than the refresh interval, then a token of a key fetched before still verifies', async () => {
    await started();
    provider.mode = 'failing';
    const asked = provider.jwksRequests;
    // Three refreshes are made, and fail: the outage outlasts the refresh interval thrice.
    await expect.poll(() => provider.jwksRequests - asked).toBeGreaterThanOrEqual(3);
    // A token never seen before (not remembered), signed with the key fetched before the outage.
    const access = await verifier.verify(await userToken());
    expect(access).toMatchObject({ clientId: 'acme', subject: 'alice' });
  });

  it('when tokens name made-up kids while its key set answers 500, then they cause at most one fetch per 30 s beside the periodic refreshes, and each is refused', async () => {
    await started();
    provider.mode = 'failing';
    // A refresh has failed before the flood begins.
    const before = provider.jwksRequests;
    await expect.poll(() => provider.jwksRequests).toBeGreaterThan(before);
    const asked = provider.jwksRequests;
    const began = Date.now();
    const refused: string[] = [];
    for (let i = 0; i < 60; i++) {
      const outcome = await verifier.verify(await userToken({ kid: `made-up-${i}` })).catch((error: unknown) => error);
      if (outcome instanceof BearerRejected) refused.push(outcome.message);
    }
    const periodic = Math.ceil((Date.now() - began) / REFRESH_MS) + 1;
    expect(refused).toEqual(refused.map(() => 'unknown signing key'));
    expect(refused).toHaveLength(60);
    expect(provider.jwksRequests - asked).toBeLessThanOrEqual(periodic + 1);
    expect(provider.jwksRequests - asked).toBeLessThan(60);
    // Once it answers again, its keys are as they were.
    provider.mode = 'up';
    expect(await verifier.verify(await userToken())).toMatchObject({ subject: 'alice' });
  });
});
