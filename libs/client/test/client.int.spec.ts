import {
  createPlatformClient,
  etagOf,
  newIdempotencyKey,
  ok,
  pages,
  PlatformError,
  type PlatformClient,
  type Schemas,
} from '@rs/client';
import { clientsOf, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// @rs/client against a running system: typed calls, the contract's helpers.
const fx = systemFixture({
  name: 'typed_client',
  backends: ['catalog', 'rights'],
  bearer: true,
  seed: { clients: clientsOf({ 'grantor-a': 'A' }), users: ['alice', 'bob'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);

let client: PlatformClient;
beforeAll(() => {
  client = createPlatformClient({
    baseUrl: `${fx.system.gatewayUrl}/`,
    credentials: { basic: { clientId: 'grantor-a', secret: 'secret-of-grantor-a' } },
  });
});

const interval = () => `${new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z')}/P1D`;
const alice = { path: { connectId: 'alice' } };

describe('@rs/client', () => {
  it('when a right is created with an Idempotency-Key and sent again, then the second answer is the kept one', async () => {
    const key = newIdempotencyKey();
    const body: Schemas['RightCreateBody'] = { sku: 'news', grantorId: 'A', timeInterval: interval(), state: 'ACTIVE' };
    const send = () =>
      client.POST('/id/users/{connectId}/rights', { params: { ...alice, header: { 'Idempotency-Key': key } }, body });
    const first = await send();
    const right: Schemas['Right'] = ok(first);
    expect(first.response.status).toBe(201);
    const again = await send();
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(ok(again).rightId).toBe(right.rightId);
  });

  it('when a change names the ETag it read, then it applies; with another generation it is a 412 PlatformError', async () => {
    const created = ok(
      await client.POST('/id/users/{connectId}/rights', {
        params: alice,
        body: { sku: 'news', grantorId: 'A', timeInterval: interval(), state: 'ACTIVE' },
      }),
    );
    const path = { connectId: 'alice', rightId: created.rightId };
    const read = await client.GET('/id/users/{connectId}/rights/{rightId}', { params: { path } });
    const suspended = await client.POST('/id/users/{connectId}/rights/{rightId}/suspend', {
      params: { path, header: { 'If-Match': etagOf(read.response) } },
    });
    expect(suspended.response.status).toBe(204);
    const stale = await client.POST('/id/users/{connectId}/rights/{rightId}/activate', {
      params: { path, header: { 'If-Match': etagOf(read.response) } },
    });
    expect(stale.response.status).toBe(412);
    const refusal = (() => {
      try {
        ok(stale);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(PlatformError);
    // Asked for as an RFC 9457 problem: what was refused, and why, in words.
    expect(refusal).toMatchObject({ status: 412, title: 'Precondition Failed', detail: expect.stringMatching(/\S/) });
  });

  it('when a non-admin lists without its grantor, then the 307 is followed; pages follows each Link to the end', async () => {
    for (let i = 0; i < 5; i++)
      ok(
        await client.POST('/id/users/{connectId}/rights', {
          params: { path: { connectId: 'bob' } },
          body: { sku: 'news', grantorId: 'A', timeInterval: interval() },
        }),
      );
    const redirected = await client.GET('/id/users/{connectId}/rights', { params: { path: { connectId: 'bob' } } });
    expect(redirected.response.redirected).toBe(true);
    expect(new URL(redirected.response.url).searchParams.get('grantorId')).toBe('A');
    expect(ok(redirected).right).toHaveLength(5);
    const seen: string[][] = [];
    for await (const page of pages((cursor) =>
      client.GET('/id/users/{connectId}/rights', {
        params: { path: { connectId: 'bob' }, query: { grantorId: 'A', limit: 2, ...(cursor ? { cursor } : {}) } },
      }),
    ))
      seen.push(page.right.map((right) => right.rightId));
    expect(seen.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(new Set(seen.flat()).size).toBe(5);
  });

  it("when a user's token checks an entitlement, then the Bearer credentials are sent and the answer is typed", async () => {
    const user = createPlatformClient({
      baseUrl: fx.system.gatewayUrl,
      credentials: { bearer: () => fx.issuer.token('grantor-a', 'alice', { scope: 'id.user.right.read' }) },
    });
    const entitlement: Schemas['Entitlement'] = ok(
      await user.GET('/id/users/{connectId}/entitlements/{sku}', {
        params: { path: { connectId: 'alice', sku: 'news' } },
      }),
    );
    expect(entitlement).toMatchObject({ connectId: 'alice', sku: 'news', entitled: true });
    const other = await user.GET('/id/users/{connectId}/entitlements/{sku}', {
      params: { path: { connectId: 'bob', sku: 'news' } },
    });
    expect(other.response.status).toBe(401);
  });
});
