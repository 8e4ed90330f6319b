import type { Principal } from '@rs/contracts';
import { describe, expect, it } from 'vitest';
import { authorize, classify, grantorFilter, listRule, redirectLocation } from '../src/domain/access';

const basic = (grantorId: string, admin = false): Principal => ({
  clientId: grantorId,
  grantorId,
  admin,
  scheme: 'basic',
  scopes: [],
  subject: null,
});
const bearer = (subject: string, scopes: string[]): Principal => ({
  clientId: 'app',
  grantorId: 'A',
  admin: false,
  scheme: 'bearer',
  scopes,
  subject,
});
/** The operation a request is, or null when the edge answers it itself (404, 405, 400). */
const op = (method: string, path: string) => {
  const found = classify(method, path);
  return found.kind === 'operation' ? found.operation : null;
};
const operation = (method: string, path: string) => {
  const found = op(method, path);
  if (!found) throw new Error(`${method} ${path} is no operation`);
  return found;
};

describe('docs/api.md: which route of the table a request is', () => {
  it('user paths go to their owning service with the connectId decoded, and the scope a Bearer token needs', () => {
    expect(op('GET', '/id/users/alice%40example.com/rights')).toMatchObject({
      owner: 'rights',
      connectId: 'alice@example.com',
      bearer: 'id.user.right.read',
      list: 'rights',
      caller: 'client',
    });
    expect(op('GET', '/id/users/alice/subs/S1')).toMatchObject({
      owner: 'subscriptions',
      bearer: 'id.user.sub.read',
      list: null,
    });
    expect(op('POST', '/id/users/alice/rights/R1/usage')).toMatchObject({ bearer: 'id.user.right.use' });
    expect(op('POST', '/id/users/alice/rights')).toMatchObject({ bearer: null, list: null });
    expect(op('GET', '/catalog/skus/news')).toMatchObject({ owner: 'catalog', caller: 'admin' });
    expect(op('GET', '/admin/clients')).toMatchObject({ owner: 'gateway', caller: 'admin' });
    expect(op('HEAD', '/id/users/alice/rights/R1')?.route.operationId).toBe('getRight');
    expect(op('GET', '/.well-known/jwks.json')).toMatchObject({ owner: 'rights', caller: 'none' });
  });

  it('a path the table does not name is 404, a named path with another method 405, before anything else', () => {
    expect(classify('GET', '/openapiXjson')).toEqual({ kind: 'not_found' }); // a dot in a template is a dot
    expect(classify('GET', '/elsewhere')).toEqual({ kind: 'not_found' });
    expect(classify('GET', '/id/users/alice/subs/S1/extra/deep')).toEqual({ kind: 'not_found' });
    expect(classify('GET', '/catalog/other')).toEqual({ kind: 'not_found' });
    expect(classify('PUT', '/id/users/alice/rights')).toEqual({
      kind: 'method_not_allowed',
      allow: ['GET', 'POST', 'HEAD'],
    });
    expect(classify('POST', '/admin/clients')).toEqual({ kind: 'method_not_allowed', allow: ['GET', 'HEAD'] });
  });

  it('literal segments match exactly: letter case, encoded letters, empty and dot segments make another path', () => {
    for (const path of [
      '/Admin/clients/pwn',
      '/ADMIN/clients/pwn',
      '/admin/Clients/pwn',
      '/%61dmin/clients/pwn',
      '/admin/clients/pwn/',
      '/admin//clients/pwn',
      '//admin/clients/pwn',
      '/admin/./clients/pwn',
      '/admin/x/../clients/pwn',
      '/Id/users/x',
      '/ID/users/x',
    ])
      expect(classify('PUT', path), path).toEqual({ kind: 'not_found' });
    // A parameter is never a dot segment, encoded or not.
    expect(classify('GET', '/id/users/alice/rights/..')).toEqual({ kind: 'not_found' });
    expect(classify('GET', '/id/users/%2e%2E/rights')).toEqual({ kind: 'not_found' });
  });

  it('malformed percent-encoding is 400, wherever it is', () => {
    expect(classify('GET', '/id/users/u/rights/%ZZ')).toEqual({ kind: 'malformed' });
    expect(classify('GET', '/id/users/%C0/rights')).toEqual({ kind: 'malformed' });
    expect(classify('GET', '/nowhere/%')).toEqual({ kind: 'malformed' });
  });

  it('Bearer is accepted only where docs/api.md gives it a scope (and to read a user)', () => {
    const bearerOf = (method: string, path: string) => op(method, path)?.bearer ?? null;
    expect(bearerOf('GET', '/id/users/alice')).toBe('any');
    expect(bearerOf('PUT', '/id/users/alice')).toBeNull();
    expect(bearerOf('GET', '/id/users/alice/rights/R1')).toBe('id.user.right.read');
    expect(bearerOf('POST', '/id/users/alice/rights/R1/usage')).toBe('id.user.right.use');
    expect(bearerOf('POST', '/id/users/alice/rights/R1/suspend')).toBeNull();
    expect(bearerOf('DELETE', '/id/users/alice/subs/S1')).toBeNull();
    expect(bearerOf('GET', '/catalog/skus')).toBeNull();
    expect(bearerOf('GET', '/admin/clients')).toBeNull();
  });

  it('operations that answer JSON, and every subscription operation', () => {
    const json = (method: string, path: string) => op(method, path)?.json ?? false;
    expect(json('GET', '/id/users/alice/rights')).toBe(true);
    expect(json('POST', '/id/users/alice/rights')).toBe(true);
    expect(json('POST', '/id/users/alice/rights/R1/suspend')).toBe(false);
    expect(json('DELETE', '/id/users/alice/rights/R1')).toBe(false);
    expect(json('POST', '/id/users/alice/subs/S1/suspend')).toBe(true);
    expect(json('DELETE', '/id/users/alice/subs/S1')).toBe(true);
    expect(json('PUT', '/admin/clients/app')).toBe(true);
    expect(json('PUT', '/admin/revoked-tokens/jti-1')).toBe(false);
    expect(json('GET', '/openapi.json')).toBe(true);
  });
});

describe('docs/api.md "Principals and authorization": who may call what', () => {
  it('admin routes and the catalog take the Basic credentials of an admin client only', () => {
    expect(authorize(operation('GET', '/catalog/skus'), basic('A'))).toMatchObject({ challenge: 'basic' });
    expect(authorize(operation('GET', '/catalog/skus'), basic('ADMIN', true))).toBeNull();
    expect(authorize(operation('PUT', '/id/users/alice'), basic('A'))).toMatchObject({ challenge: 'basic' });
  });

  it('a Bearer token: only where it has a scope, only for its own user, only with that scope', () => {
    expect(
      authorize(operation('GET', '/id/users/alice/rights/R1'), bearer('alice', ['id.user.right.read'])),
    ).toBeNull();
    expect(authorize(operation('GET', '/id/users/bob/rights/R1'), bearer('alice', ['id.user.right.read']))).toEqual({
      challenge: 'bearer',
      reason: 'token not issued for this user',
    });
    expect(authorize(operation('GET', '/id/users/alice/subs'), bearer('alice', ['id.user.right.read']))).toMatchObject({
      challenge: 'insufficient_scope',
      scope: 'id.user.sub.read',
    });
    expect(
      authorize(operation('POST', '/id/users/alice/rights'), bearer('alice', ['id.user.right.use'])),
    ).toMatchObject({ challenge: 'basic' });
    expect(authorize(operation('GET', '/id/users/alice'), bearer('alice', []))).toBeNull();
    expect(authorize(operation('GET', '/id/users/bob'), bearer('alice', []))).toMatchObject({ challenge: 'bearer' });
  });

  it('a non-admin lists with its own grantor; without the filter it is redirected', () => {
    const rights = operation('GET', '/id/users/alice/rights');
    expect(listRule(rights, basic('A'), null)).toEqual({ redirectWith: 'A' });
    expect(listRule(rights, basic('A'), 'A')).toBeNull();
    expect(listRule(rights, basic('A'), 'B')).toMatchObject({ challenge: 'grantor_mismatch' });
    expect(listRule(rights, basic('ADMIN', true), null)).toBeNull();
    expect(listRule(operation('GET', '/id/users/alice/subs'), basic('A'), 'B')).toBeNull();
  });
});

describe('docs/api.md "307"', () => {
  it('the grantor filter is found whatever the case of its name', () => {
    expect(grantorFilter(new URLSearchParams('GRANTORID=A&limit=5'))).toBe('A');
    expect(grantorFilter(new URLSearchParams('limit=5'))).toBeNull();
    expect(grantorFilter(new URLSearchParams('grantorid=A&grantorId=B'))).toBe('twice');
  });

  it("the redirect keeps every parameter and adds the caller's grantor under the name of the list", () => {
    expect(
      redirectLocation('https://api.example.com', '/id/users/alice/rights?limit=5&active=now', 'rights', 'A'),
    ).toBe('https://api.example.com/id/users/alice/rights?limit=5&active=now&grantorId=A');
    expect(redirectLocation('https://api.example.com/rs', '/id/users/alice/subs', 'subscriptions', 'B')).toBe(
      'https://api.example.com/rs/id/users/alice/subs?grantorid=B',
    );
  });
});
