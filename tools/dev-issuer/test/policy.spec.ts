import { describe, expect, it } from 'vitest';
import { devIssuerWanted, issuerRefusal } from '../src/policy';
import { parseTokenRequest } from '../src/token-request';

describe('when the development token issuer may run', () => {
  it('when NODE_ENV is production, or unset (the platform reads unset as production), then it refuses', () => {
    expect(issuerRefusal({ NODE_ENV: 'production' })).toMatch(/never runs when NODE_ENV is production/);
    expect(issuerRefusal({})).toMatch(/unset \(production\)/);
    expect(issuerRefusal({ NODE_ENV: 'staging' })).not.toBeNull();
    expect(devIssuerWanted({ NODE_ENV: 'production' })).toBe(false);
  });

  it('when in development with no identity provider configured, then `npm start` runs it', () => {
    expect(issuerRefusal({ NODE_ENV: 'development' })).toBeNull();
    expect(devIssuerWanted({ NODE_ENV: 'development' })).toBe(true);
    expect(devIssuerWanted({ NODE_ENV: 'test' })).toBe(true);
  });

  it('when the gateway already trusts a real issuer (JWKS or public key), then it does not run', () => {
    expect(devIssuerWanted({ NODE_ENV: 'development', JWT_JWKS_URL: 'https://idp.example/jwks' })).toBe(false);
    expect(devIssuerWanted({ NODE_ENV: 'development', JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----' })).toBe(false);
  });
});

describe('what the development issuer is asked for', () => {
  it('when user, client and scopes are valid, then they parse, scopes split on spaces or commas', () => {
    expect(parseTokenRequest({ user: 'alice', client: 'acme', scope: 'id.user.right.read,id.user.right.use' })).toEqual(
      {
        ok: true,
        value: { user: 'alice', client: 'acme', scope: ['id.user.right.read', 'id.user.right.use'], expiresIn: 3600 },
      },
    );
    expect(
      parseTokenRequest({ user: 'alice', client: 'acme', scope: 'id.user.sub.read', expires_in: '60' }),
    ).toMatchObject({
      ok: true,
      value: { expiresIn: 60 },
    });
  });

  it('when a scope is unknown, a field is missing or malformed, or the lifetime is out of range, then it says which', () => {
    const reason = (fields: object) => {
      const parsed = parseTokenRequest(fields);
      return parsed.ok ? null : parsed.reason;
    };
    expect(reason({ user: 'alice', client: 'acme', scope: 'admin' })).toMatch(/^scope\.0: each scope must be one of/);
    expect(reason({ user: 'alice', client: 'acme', scope: ' ' })).toMatch(/^scope: at least one scope/);
    expect(reason({ client: 'acme', scope: 'id.user.sub.read' })).toMatch(/^user: /);
    expect(reason({ user: 'a/b', client: 'acme', scope: 'id.user.sub.read' })).toMatch(/^user: must be/);
    expect(reason({ user: 'alice', client: 'acme', scope: 'id.user.sub.read', expires_in: 10 })).toMatch(
      /^expires_in: /,
    );
  });
});
