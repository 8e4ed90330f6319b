import { TokenIssuer } from './token-issuer';

/** The user claim of the Auth0 tenant below: Auth0 puts its own id in `sub`. */
export const CONNECT_ID_CLAIM = 'https://rights.acme.example/connect_id';

/** The identity providers whose token shapes the gateway maps (docs/identity-providers.md). */
export type ProviderShape = 'keycloak' | 'auth0' | 'okta' | 'entra';

/** The user each provider's user tokens act for, and the client that names it. */
export const SHAPE_USERS: Record<ProviderShape, { user: string; client: string }> = {
  keycloak: { user: 'alice', client: 'kc-app' },
  auth0: { user: 'bob', client: 'auth0-app' },
  okta: { user: 'carol', client: 'okta-app' },
  entra: { user: 'dave', client: 'entra-app' },
};

/** The roles of the Keycloak realm's staff members, and the claim naming their grantors. */
export const REALM_STAFF = {
  read: 'rights-support',
  write: 'rights-support-write',
  admin: 'rights-admin',
  grantor: 'grantor',
  grantors: ['*'],
} as const;

/** Where Keycloak's access tokens say who they are for, its service accounts included (docs/identity-providers.md). */
export const KEYCLOAK_CLAIMS = {
  client: ['azp'],
  roles: 'realm_access.roles',
  serviceAccount: { claim: 'preferred_username', prefix: 'service-account-' },
} as const;

/**
 * Four test identity providers, each signing tokens of exactly the shape its namesake does
 * (where the client, the user and the scopes or roles are), and the `AUTH_ISSUERS` entries that
 * map them: Keycloak (`azp`, realm roles, its staff), Auth0 (`azp`, `permissions`, a user claim
 * of its own, an audience list), Okta (`cid`, `scp` as a list), Entra ID (`azp`, `scp` as a
 * string, the user in `oid`).
 */
export class ProviderShapes {
  readonly keycloak = new TokenIssuer({ issuer: 'self', path: '/realms/acme', audience: 'rights-api' });
  readonly auth0 = new TokenIssuer({ issuer: 'https://acme.eu.auth0.com/', audience: 'https://rights.acme.example' });
  readonly okta = new TokenIssuer({ issuer: 'self', path: '/oauth2/default', audience: 'api://rights' });
  readonly entra = new TokenIssuer({
    issuer: 'https://login.microsoftonline.com/tenant-1/v2.0',
    audience: 'api://rights-app',
  });

  private get all(): TokenIssuer[] {
    return [this.keycloak, this.auth0, this.okta, this.entra];
  }

  async start(): Promise<void> {
    for (const provider of this.all) await provider.start();
  }

  async close(): Promise<void> {
    for (const provider of this.all) await provider.close();
  }

  /**
   * Their entries of `AUTH_ISSUERS`: two found by discovery, two at a JWKS URL; each trusted for
   * any client that is not an admin, and Keycloak's for staff of any grantor.
   */
  issuers(): object[] {
    return [
      {
        issuer: this.keycloak.issuer,
        audience: 'rights-api',
        claims: KEYCLOAK_CLAIMS,
        scopeMap: { 'rights-reader': ['id.user.right.read'] },
        clients: '*',
        staff: REALM_STAFF,
      },
      {
        issuer: this.auth0.issuer,
        audience: 'https://rights.acme.example',
        jwksUri: this.auth0.jwksUrl,
        claims: { client: ['azp'], user: CONNECT_ID_CLAIM, roles: 'permissions' },
        scopeMap: { 'read:rights': ['id.user.right.read'] },
        clients: '*',
      },
      { issuer: this.okta.issuer, audience: 'api://rights', claims: { client: ['cid'], user: 'uid' }, clients: '*' },
      {
        issuer: this.entra.issuer,
        audience: ['api://rights-app'],
        jwksUri: this.entra.jwksUrl,
        claims: { user: 'oid' },
        clients: '*',
      },
    ];
  }

  /**
   * A user token of `shape` for its user (`SHAPE_USERS`) with `grants`: the Keycloak realm roles,
   * the Auth0 permissions, or the Okta and Entra ID scopes it carries beside their usual ones.
   */
  userToken(shape: ProviderShape, grants: readonly string[]): Promise<string> {
    const { user, client } = SHAPE_USERS[shape];
    switch (shape) {
      case 'keycloak':
        return this.keycloak.sign({
          sub: user,
          azp: client,
          typ: 'Bearer',
          scope: 'openid profile',
          realm_access: { roles: ['offline_access', ...grants] },
          preferred_username: user,
        });
      case 'auth0':
        return this.auth0.sign({
          sub: 'auth0|6543210',
          [CONNECT_ID_CLAIM]: user,
          azp: client,
          aud: ['https://rights.acme.example', 'https://acme.eu.auth0.com/userinfo'],
          scope: 'openid profile',
          permissions: [...grants],
        });
      case 'okta':
        return this.okta.sign({ sub: `${user}@acme.example`, uid: user, cid: client, scp: ['openid', ...grants] });
      case 'entra':
        return this.entra.sign({
          sub: 'AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ',
          oid: user,
          azp: client,
          scp: ['User.Read', ...grants].join(' '),
          ver: '2.0',
        });
    }
  }

  /** What each shape carries to read its user's rights: a mapped role or permission, or the scope. */
  static readonly READ_GRANTS: Record<ProviderShape, readonly string[]> = {
    keycloak: ['rights-reader'],
    auth0: ['read:rights'],
    okta: ['id.user.right.read'],
    entra: ['id.user.right.read'],
  };

  /** A support agent of the Keycloak realm: `sub` and `name`, its realm roles and the grantors it serves. */
  staffToken(sub: string, roles: readonly string[], grantors: readonly string[] = []): Promise<string> {
    return this.keycloak.sign({
      sub,
      azp: 'rights-console',
      name: `Agent ${sub}`,
      realm_access: { roles: [...roles] },
      [REALM_STAFF.grantor]: [...grantors],
    });
  }
}
