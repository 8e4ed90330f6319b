import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';

export const TEST_ISSUER = 'https://issuer.test';
export const TEST_AUDIENCE = 'rights-api';

/**
 * A test identity provider: signs RFC 9068 access tokens with a real key and serves its
 * JWKS over HTTP. `mode` makes the key set endpoint fail or hang, as a broken provider would.
 */
export class TokenIssuer {
  mode: 'up' | 'down' | 'slow' = 'up';
  private server: http.Server | undefined;
  private privateKey: CryptoKey | undefined;
  private jwk: JWK | undefined;
  readonly kid = 'test-key-1';
  jwksRequests = 0;

  async start(): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    this.privateKey = privateKey;
    this.jwk = { ...(await exportJWK(publicKey)), kid: this.kid, alg: 'RS256', use: 'sig' };
    this.server = http.createServer((_req, res) => {
      this.jwksRequests += 1;
      if (this.mode === 'down') return res.writeHead(503).end();
      if (this.mode === 'slow') return; // never answers
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [this.jwk] }));
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
  }

  get jwksUrl(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/.well-known/jwks.json`;
  }

  /** Gateway settings for this issuer. */
  get env(): Record<string, string> {
    return { JWT_JWKS_URL: this.jwksUrl, JWT_ISSUER: TEST_ISSUER, JWT_AUDIENCE: TEST_AUDIENCE };
  }

  /** A valid token for `clientId` acting for `subject`; `claims` and `header` override. */
  async token(
    clientId: string,
    subject: string,
    claims: JWTPayload = {},
    header: Record<string, unknown> = {},
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const payload: JWTPayload = {
      iss: TEST_ISSUER,
      aud: TEST_AUDIENCE,
      sub: subject,
      iat: now,
      exp: now + 300,
      client_id: clientId,
      jti: `jti-${Math.random().toString(36).slice(2)}`,
      ...claims,
    };
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: this.kid, ...header })
      .sign(this.privateKey!);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
