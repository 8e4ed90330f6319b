import type { Principal } from '@rs/contracts';
import { describe, expect, it } from 'vitest';
import { Forwarding } from '../src/app/forwarding';
import { classify, type Operation } from '../src/domain/access';

const GATEWAY: Principal = {
  clientId: 'gateway',
  grantorId: null,
  admin: true,
  scheme: 'basic',
  scopes: [],
  subject: null,
};
const acme: Principal = {
  clientId: 'acme-app',
  grantorId: 'acme',
  admin: false,
  scheme: 'basic',
  scopes: [],
  subject: null,
};
const alicesApp: Principal = {
  clientId: 'acme-app',
  grantorId: 'acme',
  admin: false,
  scheme: 'bearer',
  scopes: ['id.user.right.read'],
  subject: 'alice',
};

const forwarding = new Forwarding({
  users: { find: async (id) => (id === 'alice' ? { connectId: id, createdAt: new Date(0) } : null) },
  publicBaseUrl: 'https://api.example.com',
  gateway: GATEWAY,
});

function operation(method: string, url: string): Operation {
  const found = classify(method, url.split('?')[0]!);
  if (found.kind !== 'operation') throw new Error(`${method} ${url} is no operation`);
  return found.operation;
}

const route = (method: string, url: string, principal: Principal | undefined) =>
  forwarding.route({ operation: operation(method, url), principal, url, sourceAddress: '203.0.113.7' });

describe('the forwarding use case: what the edge does with a request (docs/api.md)', () => {
  it('when a route is open, then it is forwarded as the gateway, spending its source address’s budget', async () => {
    expect(await route('GET', '/.well-known/jwks.json', undefined)).toEqual({
      kind: 'forward',
      service: 'rights',
      caller: GATEWAY,
      budget: { kind: 'address', key: '203.0.113.7' },
    });
  });

  it('when a client lists without its grantor filter, then it is redirected with it, and with it the list is forwarded on its budget', async () => {
    expect(await route('GET', '/id/users/alice/rights?limit=5', acme)).toEqual({
      kind: 'redirect',
      location: 'https://api.example.com/id/users/alice/rights?limit=5&grantorId=acme',
    });
    expect(await route('GET', '/id/users/alice/rights?grantorId=acme', acme)).toMatchObject({
      kind: 'forward',
      service: 'rights',
      budget: { kind: 'client', key: 'acme-app' },
    });
  });

  it('when a Basic client names another grantor in a rights list, or a token acts for another user, then it is refused with the challenge of its rule', async () => {
    expect(await route('GET', '/id/users/alice/rights?grantorId=other', acme)).toMatchObject({
      kind: 'refuse',
      refusal: { challenge: 'grantor_mismatch' },
    });
    expect(await route('GET', '/id/users/bob/rights?grantorId=acme', alicesApp)).toMatchObject({
      kind: 'refuse',
      refusal: { challenge: 'bearer' },
    });
  });

  it('when a user’s app calls for its own user, then the call spends the (client, user) budget, apart from its client’s', async () => {
    expect(await route('GET', '/id/users/alice/rights?grantorId=acme', alicesApp)).toMatchObject({
      kind: 'forward',
      budget: { kind: 'user', key: 'acme-app alice' },
    });
  });

  it('when the path names a user the directory does not know, then it is 404 before anything is forwarded', async () => {
    await expect(route('GET', '/id/users/nobody/rights?grantorId=acme', acme)).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('when a route is the gateway’s own, then the gateway answers it once the caller may call it', async () => {
    expect(await route('GET', '/id/users/alice', acme)).toEqual({ kind: 'answer' });
    expect(await route('GET', '/admin/clients', acme)).toMatchObject({
      kind: 'refuse',
      refusal: { challenge: 'basic' },
    });
  });
});
