import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';

export const TEST_ISSUER = 'https://issuer.test';
export const TEST_AUDIENCE = 'rights-api';
/** The roles of the test issuer's staff members. */
export const STAFF_ROLES = { read: 'rights-support', write: 'rights-support-write', admin: 'rights-admin' } as const;

/**
 * A test identity provider: signs access tokens with a real key and serves its JWKS, and its
 * OpenID Connect discovery document under any path (`<issuer>/.well-known/openid-configuration`),
 * over HTTP. `issuer`: the `iss` it signs with; `'self'` makes it its own URL (with `path`), so
 * that the gateway finds its keys by discovery. `mode` makes it fail or hang, as a broken
 * provider would; `rotate()` publishes a new key and signs with it, the old one still listed.
 */
export class TokenIssuer {
  mode: 'up' | 'down' | 'failing' | 'slow' = 'up';
  private server: http.Server | undefined;
  private privateKey: CryptoKey | undefined;
  private readonly jwks: JWK[] = [];
  kid = 'test-key-1';
  jwksRequests = 0;
  discoveryRequests = 0;

  constructor(private readonly options: { issuer?: string; audience?: string; path?: string } = {}) {}

  async start(): Promise<void> {
    await this.addKey(this.kid);
    this.server = http.createServer((req, res) => {
      // Every request is counted, answered or not: a test counts what a gateway asked.
      const discovery = req.url?.endsWith('/.well-known/openid-configuration') === true;
      if (discovery) this.discoveryRequests += 1;
      else this.jwksRequests += 1;
      if (this.mode === 'down') return res.writeHead(503).end();
      if (this.mode === 'failing') return res.writeHead(500).end();
      if (this.mode === 'slow') return; // never answers
      if (discovery) {
        return res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ issuer: this.issuer, jwks_uri: this.jwksUrl, token_endpoint: `${this.issuer}/token` }));
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: this.jwks }));
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
  }

  /** A new signing key, published beside the old ones; tokens are signed with it from now on. */
  async rotate(): Promise<void> {
    await this.addKey(`test-key-${this.jwks.length + 1}`);
  }

  private async addKey(kid: string): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    this.privateKey = privateKey;
    this.kid = kid;
    this.jwks.push({ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' });
  }

  private get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  get issuer(): string {
    const { issuer = TEST_ISSUER, path = '' } = this.options;
    return issuer === 'self' ? `${this.url}${path}` : issuer;
  }

  get audience(): string {
    return this.options.audience ?? TEST_AUDIENCE;
  }

  get jwksUrl(): string {
    return `${this.url}/.well-known/jwks.json`;
  }

  /**
   * Gateway settings for this issuer: its entry of `AUTH_ISSUERS`, trusted for any client that
   * is not an admin, with the staff roles of `STAFF_ROLES` in its `roles` claim and the grantors
   * of a staff member in `grantor` (any grantor).
   */
  get env(): Record<string, string> {
    return this.envWith({});
  }

  /** `env` with these fields of the entry replaced (`clients: ['admin-app']` lists an admin client by id). */
  envWith(fields: object): Record<string, string> {
    return {
      AUTH_ISSUERS: JSON.stringify([
        {
          issuer: this.issuer,
          audience: this.audience,
          jwksUri: this.jwksUrl,
          claims: { roles: 'roles' },
          clients: '*',
          staff: { ...STAFF_ROLES, grantor: 'grantor', grantors: ['*'] },
          ...fields,
        },
      ]),
    };
  }

  /** A staff member's token (docs/identity-providers.md "Staff"): `role` for `grantors`. */
  staffToken(member: string, role: keyof typeof STAFF_ROLES, grantors: string[] = []): Promise<string> {
    return this.sign({
      sub: member,
      azp: 'console',
      roles: [STAFF_ROLES[role]],
      grantor: grantors,
      name: `Agent ${member}`,
    });
  }

  /**
   * A token of exactly these claims (an identity provider's own shape) with the registered ones
   * (`iss`, `aud`, `iat`, `exp`, `jti`) unless given; `header` overrides the protected header.
   */
  async sign(claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const payload: JWTPayload = {
      iss: this.issuer,
      aud: this.audience,
      iat: now,
      exp: now + 300,
      jti: `jti-${Math.random().toString(36).slice(2)}`,
      ...claims,
    };
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: this.kid, ...header })
      .sign(this.privateKey!);
  }

  /** A valid RFC 9068 token for `clientId` acting for `subject`; `claims` and `header` override. */
  async token(
    clientId: string,
    subject: string,
    claims: JWTPayload = {},
    header: Record<string, unknown> = {},
  ): Promise<string> {
    return this.sign({ sub: subject, client_id: clientId, ...claims }, header);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
