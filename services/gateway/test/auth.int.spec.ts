import { performance } from 'node:perf_hooks';
import { TestSystem, TokenIssuer } from '@rs/testing';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let issuer: TokenIssuer;
let system: TestSystem;

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const GRANTOR_A = basic('grantor-a', 'secret-of-grantor-a');
const GRANTOR_B = basic('grantor-b', 'secret-of-grantor-b');
const SEE = {
  basic: 'Basic realm="rights", charset="UTF-8"',
  bearer: (description: string) => `Bearer realm="rights", error="invalid_token", error_description="${description}"`,
  scope: (scope: string) => `Bearer realm="rights", error="insufficient_scope", scope="${scope}"`,
};

function call(method: string, path: string, authorization?: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = authorization ? { authorization } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${system.gatewayUrl}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  });
}
const admin = () => system.adminHeaders().authorization!;

async function expect401(response: Response, challenge: string) {
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toBe(challenge);
  expect(response.headers.get('content-type')).toMatch(/^text\/html/);
}

/** The request passed the gateway: the rights or subscriptions service itself answered. */
async function expectForwarded(response: Response) {
  if (response.status === 200) {
    expect(await response.json()).toHaveProperty(response.url.includes('/rights') ? 'right' : 'subscription');
    return;
  }
  expect(response.status).toBe(404);
  expect(await response.text()).toMatch(/no right R1 for user|no subscription S1 for user/);
}

beforeAll(async () => {
  issuer = new TokenIssuer();
  await issuer.start();
  system = await TestSystem.start({
    name: 'gateway_auth',
    backends: ['catalog', 'rights', 'subscriptions'],
    // An admin client's tokens are trusted from an issuer that lists it by id (docs/identity-providers.md).
    env: issuer.envWith({ clients: ['grantor-a', 'grantor-b', 'app-a', 'admin-app'] }),
  });
  for (const [clientId, grantorId, isAdmin] of [
    ['grantor-a', 'A', false],
    ['grantor-b', 'B', false],
    ['app-a', 'A', false],
    ['admin-app', 'ADM', true],
  ] as const) {
    const response = await call('PUT', `/admin/clients/${clientId}`, admin(), {
      secret: `secret-of-${clientId}`,
      grantorId,
      admin: isAdmin,
    });
    expect(response.status).toBe(201);
  }
  for (const user of ['alice', 'bob']) expect((await call('PUT', `/id/users/${user}`, admin())).status).toBe(201);
});
afterAll(async () => {
  await system?.stop();
  await issuer?.close();
});

describe('API clients (admin)', () => {
  it('when clients are listed, then no secret or hash is shown', async () => {
    const response = await call('GET', '/admin/clients', admin());
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toMatch(/secret|scrypt|hash/i);
    const { clients } = JSON.parse(text) as { clients: Array<{ clientId: string; grantorId: string; admin: boolean }> };
    expect(clients).toEqual(
      expect.arrayContaining([expect.objectContaining({ clientId: 'grantor-a', grantorId: 'A', admin: false })]),
    );
  });

  it('when a client is changed or deleted, then its old credentials stop working', async () => {
    expect(
      (await call('PUT', '/admin/clients/temp', admin(), { secret: 'first-secret-123', grantorId: 'T' })).status,
    ).toBe(201);
    expect((await call('GET', '/id/users/alice', basic('temp', 'first-secret-123'))).status).toBe(200);
    expect(
      (await call('PUT', '/admin/clients/temp', admin(), { secret: 'second-secret-123', grantorId: 'T' })).status,
    ).toBe(204);
    await expect401(await call('GET', '/id/users/alice', basic('temp', 'first-secret-123')), SEE.basic);
    expect((await call('GET', '/id/users/alice', basic('temp', 'second-secret-123'))).status).toBe(200);
    expect((await call('DELETE', '/admin/clients/temp', admin())).status).toBe(204);
    await expect401(await call('GET', '/id/users/alice', basic('temp', 'second-secret-123')), SEE.basic);
  });

  it('when the client body is invalid, then 400 text/plain names the field', async () => {
    const response = await call('PUT', '/admin/clients/bad', admin(), { secret: 'short', grantorId: 'A', extra: 1 });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toMatch(/unknown field\(s\): extra/);
    expect(
      await (await call('PUT', '/admin/clients/bad', admin(), { secret: 'short', grantorId: 'A' })).text(),
    ).toMatch(/secret: must be at least 12/);
  });

  it('when a non-admin or a Bearer token calls an admin route, then 401 with the Basic challenge', async () => {
    await expect401(await call('GET', '/admin/clients', GRANTOR_A), SEE.basic);
    const adminToken = await issuer.token('admin-app', 'alice', { scope: 'id.user.right.read' });
    await expect401(await call('GET', '/admin/clients', `Bearer ${adminToken}`), SEE.basic);
    await expect401(await call('PUT', '/catalog/skus/x', GRANTOR_A, {}), SEE.basic);
    await expect401(await call('GET', '/catalog/skus', `Bearer ${adminToken}`), SEE.basic);
  });

  it('when one client fails again and again, then it is throttled with 429 and Retry-After', async () => {
    expect(
      (await call('PUT', '/admin/clients/guessed', admin(), { secret: 'the-real-secret-1', grantorId: 'G' })).status,
    ).toBe(201);
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 7; attempt++)
      statuses.push((await call('GET', '/id/users/alice', basic('guessed', `wrong-${attempt}`))).status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.at(-1)).toBe(429);
    const blocked = await call('GET', '/id/users/alice', basic('guessed', 'the-real-secret-1'));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(blocked.headers.get('content-type')).toMatch(/^text\/plain/);
  });
});

describe('garbage in Authorization', () => {
  const garbage: Array<[string, string]> = [
    ['another scheme', 'Digest username="x"'],
    ['bad base64', 'Basic %%%%'],
    ['no colon', `Basic ${Buffer.from('nocolon').toString('base64')}`],
    ['an empty id', `Basic ${Buffer.from(':secret').toString('base64')}`],
    ['an empty secret', `Basic ${Buffer.from('grantor-a:').toString('base64')}`],
    ['not UTF-8', `Basic ${Buffer.from([0x67, 0x3a, 0xff, 0xfe, 0xfd]).toString('base64')}`],
    ['a huge header', `Basic ${'A'.repeat(10_000)}`],
    ['the scheme alone', 'Basic'],
  ];
  for (const [what, header] of garbage) {
    it(`when the header has ${what}, then 401 with the Basic challenge`, async () => {
      await expect401(await call('GET', '/id/users/alice', header), SEE.basic);
    });
  }
});

describe('Bearer tokens', () => {
  it('when a token is for the user in the path, then user routes answer; for another user, invalid_token', async () => {
    const token = await issuer.token('app-a', 'alice', { scope: 'id.user.right.read' });
    expect((await call('GET', '/id/users/alice', `Bearer ${token}`)).status).toBe(200);
    await expect401(
      await call('GET', '/id/users/bob', `Bearer ${token}`),
      SEE.bearer('token not issued for this user'),
    );
    await expect401(
      await call('GET', '/id/users/bob/rights?grantorId=A', `Bearer ${token}`),
      SEE.bearer('token not issued for this user'),
    );
    // An admin client's token may touch any user.
    const adminToken = await issuer.token('admin-app', 'alice', { scope: 'id.user.right.read' });
    await expectForwarded(await call('GET', '/id/users/bob/rights', `Bearer ${adminToken}`));
  });

  it('when each scope of docs/api.md is present or missing, then the operation is forwarded or refused with insufficient_scope', async () => {
    const cases: Array<[string, string, string]> = [
      ['GET', '/id/users/alice/subs?grantorid=A', 'id.user.sub.read'],
      ['GET', '/id/users/alice/subs/S1', 'id.user.sub.read'],
      ['GET', '/id/users/alice/rights?grantorId=A', 'id.user.right.read'],
      ['GET', '/id/users/alice/rights/R1', 'id.user.right.read'],
      ['POST', '/id/users/alice/rights/R1/usage', 'id.user.right.use'],
    ];
    for (const [method, path, scope] of cases) {
      const others = ['id.user.sub.read', 'id.user.right.read', 'id.user.right.use'].filter((s) => s !== scope);
      const without = await issuer.token('app-a', 'alice', { scope: others.join(' ') });
      await expect401(await call(method, path, `Bearer ${without}`), SEE.scope(scope));
      const withScope = await issuer.token('app-a', 'alice', { scp: [scope] });
      await expectForwarded(await call(method, path, `Bearer ${withScope}`));
    }
  });

  it('when a Bearer token calls a Basic-only operation, then 401 with the Basic challenge', async () => {
    const token = await issuer.token('app-a', 'alice', {
      scope: 'id.user.sub.read id.user.right.read id.user.right.use',
    });
    for (const [method, path] of [
      ['POST', '/id/users/alice/subs'],
      ['DELETE', '/id/users/alice/subs/S1'],
      ['POST', '/id/users/alice/subs/S1/activate'],
      ['POST', '/id/users/alice/subs/S1/suspend'],
      ['POST', '/id/users/alice/rights'],
      ['DELETE', '/id/users/alice/rights/R1'],
      ['POST', '/id/users/alice/rights/R1/suspend'],
      ['POST', '/id/users/alice/rights/R1/activate'],
    ]) {
      await expect401(await call(method!, path!, `Bearer ${token}`), SEE.basic);
    }
  });

  it('when a token is revoked by its jti, then it is refused as revoked', async () => {
    const token = await issuer.token('app-a', 'alice', { scope: 'id.user.right.read', jti: 'revoke-me' });
    expect((await call('GET', '/id/users/alice', `Bearer ${token}`)).status).toBe(200);
    expect((await call('PUT', '/admin/revoked-tokens/revoke-me', admin())).status).toBe(201);
    expect((await call('PUT', '/admin/revoked-tokens/revoke-me', admin())).status).toBe(204);
    await expect401(await call('GET', '/id/users/alice', `Bearer ${token}`), SEE.bearer('revoked'));
  });

  it('when a token is of the access token types, or names none, then it is accepted', async () => {
    for (const typ of [undefined, 'JWT', 'at+jwt', 'application/at+jwt']) {
      const token = await issuer.token('app-a', 'alice', {}, { typ });
      expect((await call('GET', '/id/users/alice', `Bearer ${token}`)).status, String(typ)).toBe(200);
    }
  });

  it('when tokens are bad in any of the usual ways, then each gets the invalid_token challenge quickly', async () => {
    const now = Math.floor(Date.now() / 1000);
    const good = await issuer.token('app-a', 'alice', { scope: 'id.user.right.read' });
    const [header, payload, signature] = good.split('.');
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: 'bob' })).toString('base64url')}.${signature}`;
    const unsigned = new UnsecuredJWT({ client_id: 'app-a', scope: 'id.user.right.read' })
      .setIssuer('https://issuer.test')
      .setAudience('rights-api')
      .setSubject('alice')
      .setExpirationTime('5m')
      .encode();
    const hmac = await new SignJWT({ client_id: 'app-a' })
      .setProtectedHeader({ alg: 'HS256', kid: issuer.kid })
      .setIssuer('https://issuer.test')
      .setAudience('rights-api')
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('a-shared-secret-that-should-not-work'));
    const cases: Array<[string, string, string]> = [
      ['expired', await issuer.token('app-a', 'alice', { exp: now - 3600 }), 'expired'],
      ['not yet valid', await issuer.token('app-a', 'alice', { nbf: now + 3600 }), 'not yet valid'],
      ['an issuer not trusted', await issuer.token('app-a', 'alice', { iss: 'https://evil.test' }), 'unknown issuer'],
      ['wrong audience', await issuer.token('app-a', 'alice', { aud: 'someone-else' }), 'wrong audience'],
      ['alg none', unsigned, 'malformed'],
      ['HMAC with a guessed key', hmac, 'algorithm not allowed'],
      ['tampered payload', tampered, 'invalid signature'],
      ['unknown kid', await issuer.token('app-a', 'alice', {}, { kid: 'no-such-key' }), 'unknown signing key'],
      ['unknown client', await issuer.token('nobody', 'alice'), 'unknown client'],
      ['no client_id', await issuer.token('', 'alice'), 'client missing (client_id, azp, cid)'],
      // RFC 9068: another kind of token, a lifetime past JWT_MAX_TOKEN_LIFETIME_S, no jti (never revocable).
      ['a right token', await issuer.token('app-a', 'alice', {}, { typ: 'right+jwt' }), 'not an access token'],
      ['an ID token', await issuer.token('app-a', 'alice', {}, { typ: 'id+jwt' }), 'not an access token'],
      [
        'valid for 100 years',
        await issuer.token('app-a', 'alice', { exp: now + 100 * 365 * 86_400 }),
        'lifetime too long',
      ],
      [
        'no iat, valid for two days',
        await issuer.token('app-a', 'alice', { iat: undefined, exp: now + 2 * 86_400 }),
        'lifetime too long',
      ],
      ['no jti', await issuer.token('app-a', 'alice', { jti: undefined }), 'jti missing'],
      ['garbage', 'not-a-jwt', 'malformed'],
      ['three dots of nothing', 'a.b.c', 'malformed'],
    ];
    for (const [what, token, description] of cases) {
      const started = performance.now();
      const response = await call('GET', '/id/users/alice', `Bearer ${token}`);
      expect(performance.now() - started, what).toBeLessThan(3_000);
      expect(response.status, what).toBe(401);
      expect(response.headers.get('www-authenticate'), what).toBe(SEE.bearer(description));
    }
  });
});

describe('307 redirects and the grantor filter (docs/api.md "307")', () => {
  it('when a non-admin lists without the grantor filter, then 307 to the same URL with its own grantor', async () => {
    const subs = await call('GET', '/id/users/alice/subs?limit=5', GRANTOR_A);
    expect(subs.status).toBe(307);
    expect(subs.headers.get('location')).toBe(`${system.gatewayUrl}/id/users/alice/subs?limit=5&grantorid=A`);
    const rights = await call('GET', '/id/users/alice/rights?active=true&limit=2', GRANTOR_A);
    expect(rights.status).toBe(307);
    expect(rights.headers.get('location')).toBe(
      `${system.gatewayUrl}/id/users/alice/rights?active=true&limit=2&grantorId=A`,
    );
    const token = await issuer.token('app-a', 'alice', { scope: 'id.user.right.read' });
    const viaBearer = await call('GET', '/id/users/alice/rights', `Bearer ${token}`);
    expect(viaBearer.status).toBe(307);
    expect(viaBearer.headers.get('location')).toBe(`${system.gatewayUrl}/id/users/alice/rights?grantorId=A`);
  });

  it('when the filter is given in any letter case, or the caller is an admin, then the list is forwarded', async () => {
    await expectForwarded(await call('GET', '/id/users/alice/subs?GRANTORID=A', GRANTOR_A));
    await expectForwarded(await call('GET', '/id/users/alice/rights?grantorid=A', GRANTOR_A));
    await expectForwarded(await call('GET', '/id/users/alice/rights', admin()));
    await expectForwarded(await call('GET', '/id/users/alice/subs', admin()));
  });

  it('when a Basic caller lists rights of another grantor, then 401 with the grantor_mismatch challenge', async () => {
    await expect401(
      await call('GET', '/id/users/alice/rights?grantorId=A', GRANTOR_B),
      'Basic realm="rights", error="grantor_mismatch"',
    );
  });

  it('when the filter is given twice in two spellings, then 400 before any grantor rule, for an admin too; a subscription list of another grantor is empty (contract rule 1)', async () => {
    for (const path of [
      '/id/users/alice/rights?grantorid=B&grantorId=A',
      '/id/users/alice/subs?grantorid=A&GrantorId=B',
    ])
      for (const caller of [GRANTOR_A, GRANTOR_B, admin()]) {
        const response = await call('GET', path, caller);
        expect([path, response.status, (await response.text()).trim()]).toEqual([
          path,
          400,
          'query parameter grantorId must be given once',
        ]);
      }
    // Only the rights list answers another grantor with grantor_mismatch (contract rule 5): a
    // grantor sees only the subscriptions it created, so another's list is empty to it.
    const others = await call('GET', '/id/users/alice/subs?grantorid=A', GRANTOR_B);
    expect([others.status, await others.json()]).toEqual([200, { subscription: [] }]);
  });
});

describe('services behind the gateway', () => {
  it('when a request reaches rights, subscriptions or catalog without the internal token, then it is refused', async () => {
    for (const service of ['rights', 'subscriptions', 'catalog']) {
      const direct = await fetch(`${system.service(service).url}/id/users/alice/rights?grantorId=A`, {
        headers: { authorization: GRANTOR_A },
      });
      expect(direct.status, service).toBe(401);
      expect(await direct.text()).toMatch(/only through the gateway/);
    }
  });
});

describe('users', () => {
  it('when a user is unknown, then every user route answers 404 text/html, after authentication', async () => {
    for (const [method, path] of [
      ['GET', '/id/users/nobody'],
      ['GET', '/id/users/nobody/subs?grantorid=A'],
      ['POST', '/id/users/nobody/subs'],
      ['GET', '/id/users/nobody/rights?grantorId=A'],
      ['POST', '/id/users/nobody/rights/R1/usage'],
    ]) {
      await expect401(await call(method!, path!), SEE.basic);
      const response = await call(method!, path!, GRANTOR_A);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await response.text()).toMatch(/no user nobody/);
    }
  });

  it('when an admin registers and removes a user, then the directory follows; others may only read', async () => {
    await expect401(await call('PUT', '/id/users/carol', GRANTOR_A), SEE.basic);
    expect((await call('PUT', '/id/users/carol', admin())).status).toBe(201);
    expect((await call('PUT', '/id/users/carol', admin())).status).toBe(204);
    const read = await call('GET', '/id/users/carol', GRANTOR_B);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ connectId: 'carol', href: `${system.gatewayUrl}/id/users/carol` });
    await expect401(await call('DELETE', '/id/users/carol', GRANTOR_A), SEE.basic);
    expect((await call('DELETE', '/id/users/carol', admin())).status).toBe(204);
    expect((await call('GET', '/id/users/carol', GRANTOR_B)).status).toBe(404);
    expect((await call('PUT', '/id/users/bad%20id', admin())).status).toBe(400);
  });

  it('when an admin lists the users, then it pages through the directory in connectId order; no one else may list it', async () => {
    for (const user of ['u-1', 'u-2', 'u-3'])
      expect((await call('PUT', `/id/users/${user}`, admin())).status).toBe(201);
    await expect401(await call('GET', '/id/users', GRANTOR_A), SEE.basic);
    const seen: string[] = [];
    let next: string | null = `${system.gatewayUrl}/id/users?limit=2`;
    while (next) {
      const page: Response = await fetch(next, { headers: { authorization: admin() } });
      expect(page.status).toBe(200);
      const { users } = (await page.json()) as { users: Array<{ connectId: string; href: string }> };
      expect(users.length).toBeLessThanOrEqual(2);
      seen.push(...users.map((user) => user.connectId));
      next = /<([^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1] ?? null;
    }
    expect(seen).toEqual([...seen].sort());
    expect(seen).toEqual(expect.arrayContaining(['alice', 'bob', 'u-1', 'u-2', 'u-3']));
    expect(new Set(seen).size).toBe(seen.length);
    expect((await call('GET', '/id/users?cursor=bad%20id', admin())).status).toBe(400);
  });
});
