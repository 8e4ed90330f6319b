import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mapClaims } from '../src/domain/claims';
import { issuersFrom } from '../src/auth/issuers';

// docs/identity-providers.md: the issuer list, read once at start, and what a token's claims say under it.
describe('the trusted issuers (AUTH_ISSUERS)', () => {
  it('when an entry is wrong, then the gateway stops naming the variable, the entry and the field', () => {
    const wrong = (value: unknown) => () => issuersFrom({ AUTH_ISSUERS: JSON.stringify(value) });
    expect(wrong([{ issuer: 'https://a.example' }])).toThrow(/^entry 0 \(https:\/\/a.example\) field audience /);
    expect(
      wrong([
        { issuer: 'https://a.example', audience: 'x' },
        { issuer: 'https://b.example', audience: 'x', scopeMap: { admin: ['everything'] } },
      ]),
    ).toThrow(/^entry 1 \(https:\/\/b.example\) field scopeMap.admin.0 /);
    expect(wrong([{ issuer: 'https://a.example', audience: 'x', jwksUri: 'ftp://keys' }])).toThrow(/field jwksUri/);
    expect(wrong([{ issuer: 'https://a.example', audience: 'x', staff: { grantor: 'g', grantors: ['*'] } }])).toThrow(
      /field staff names no role/,
    );
    // Issuers stay in their lane: staff serve the grantors the entry names, and that list is required.
    expect(wrong([{ issuer: 'https://a.example', audience: 'x', staff: { read: 'r' } }])).toThrow(
      /field staff.grantors /,
    );
    expect(wrong([{ issuer: 'https://a.example', audience: 'x', staff: { read: 'r', grantors: [] } }])).toThrow(
      /field staff.grantors names no grantor/,
    );
    expect(wrong([{ issuer: 'https://a.example', audience: 'x', staff: { read: 'r', grantors: ['*', 'a'] } }])).toThrow(
      /field staff.grantors is \["\*"\] or a list/,
    );
    expect(wrong([{ issuer: 'https://a.example', audience: 'x', clients: 'all' }])).toThrow(/field clients/);
    expect(wrong([{ issuer: 'https://a.example', audience: 'x', clams: {} }])).toThrow(/Unrecognized key.*clams/);
    expect(
      wrong([
        { issuer: 'https://a.example', audience: 'x' },
        { issuer: 'https://a.example', audience: 'y' },
      ]),
    ).toThrow(/entry 1 \(https:\/\/a.example\) field issuer is listed twice/);
    expect(() => issuersFrom({ AUTH_ISSUERS: '[{' })).toThrow(/cannot be read/);
    expect(() => issuersFrom({ AUTH_ISSUERS: '[]', JWT_ISSUER: 'https://a.example' })).toThrow(/not several/);
  });

  it('when the list is a YAML file, or the JWT_* shorthand, then each entry gets the default claims', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'issuers-')), 'issuers.yaml');
    writeFileSync(
      file,
      '- issuer: https://idp.example/realms/acme\n  audience: [rights-api]\n  claims: { roles: realm_access.roles }\n',
    );
    expect(issuersFrom({ AUTH_ISSUERS_FILE: file })).toEqual([
      {
        issuer: 'https://idp.example/realms/acme',
        audience: ['rights-api'],
        claims: {
          client: ['client_id', 'azp', 'cid'],
          user: 'sub',
          scopes: ['scope', 'scp'],
          roles: 'realm_access.roles',
        },
        scopeMap: {},
        // Without `clients`, its tokens may name no API client.
        clients: [],
      },
    ]);
    // The shorthand's one issuer speaks for the whole platform: any client but an admin.
    expect(issuersFrom({ JWT_ISSUER: 'https://a.example', JWT_AUDIENCE: 'api' })).toMatchObject([
      { issuer: 'https://a.example', audience: 'api', claims: { client: ['client_id', 'azp', 'cid'] }, clients: '*' },
    ]);
    expect(issuersFrom({})).toEqual([]);
  });

  it('when claims are mapped, then the client is the first present, the user a path, and scopes come from scope, scp and roles', () => {
    const mapping = {
      claims: {
        client: ['client_id', 'azp', 'cid'],
        user: 'ext.connect_id',
        scopes: ['scope', 'scp'],
        roles: 'realm_access.roles',
      },
      scopeMap: { reader: ['id.user.right.read'], user: ['id.user.right.use', 'id.user.right.read'] },
    };
    expect(
      mapClaims(
        {
          azp: 'app',
          cid: 'other',
          ext: { connect_id: 'alice' },
          scp: ['id.user.sub.read'],
          realm_access: { roles: ['reader', 'user', 7] },
        },
        mapping,
      ),
    ).toEqual({
      clientId: 'app',
      subject: 'alice',
      scopes: ['id.user.sub.read', 'id.user.right.read', 'id.user.right.use'],
      staff: null,
      name: null,
      clientCredentials: false,
    });
    expect(mapClaims({ client_id: '', cid: 'okta', scope: 'a  b', ext: { connect_id: 3 } }, mapping)).toEqual({
      clientId: 'okta',
      subject: null,
      scopes: ['a', 'b'],
      staff: null,
      name: null,
      clientCredentials: false,
    });
    // Client credentials: `sub` is the client, Auth0's `<client>@clients`, or `gty` says so.
    for (const claims of [{ sub: 'okta' }, { sub: 'okta@clients' }, { gty: 'client-credentials' }])
      expect(mapClaims({ cid: 'okta', ...claims }, mapping).clientCredentials).toBe(true);
    // Keycloak's service accounts, as the entry's `claims.serviceAccount` says: the user name
    // `service-account-<client>` (in lower case), `sub` a UUID; another client's account is not.
    const keycloak = {
      ...mapping,
      claims: { ...mapping.claims, serviceAccount: { claim: 'preferred_username', prefix: 'service-account-' } },
    };
    const account = { sub: '5f0c9a52-0b1e-4a8e-9d6f-2b3c4d5e6f70', azp: 'Acme' };
    expect(mapClaims({ ...account, preferred_username: 'service-account-acme' }, keycloak).clientCredentials).toBe(
      true,
    );
    expect(mapClaims({ ...account, preferred_username: 'service-account-globex' }, keycloak).clientCredentials).toBe(
      false,
    );
    expect(mapClaims({ ...account, preferred_username: 'service-account-acme' }, mapping).clientCredentials).toBe(
      false,
    );
    // A control character in a name is kept escaped, never as it is.
    expect(mapClaims({ azp: 'app', sub: 'a', name: 'Ann\u0000\nB' }, mapping).name).toBe('Ann\\u0000\\u000aB');
    // Staff: the highest role held, and the grantors claimed.
    const staff = { read: 'support', write: 'support-write', grantor: 'tenants' };
    expect(
      mapClaims(
        { sub: 'ann', name: 'Ann', realm_access: { roles: ['support', 'support-write'] }, tenants: 'acme' },
        { ...mapping, staff },
      ),
    ).toMatchObject({ staff: { role: 'write', grantors: ['acme'] }, name: 'Ann' });
  });
});
