import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { TokenRequest } from './token-request';

export interface IssuedToken {
  accessToken: string;
  expiresIn: number;
  scope: string;
}

/**
 * Signs RFC 9068 access tokens (`typ` `at+jwt`, ES256) with a key made when it starts and
 * publishes that key as a JWKS: what the gateway's Bearer verification expects of an
 * identity provider (docs/api.md), without one. The key lives in memory only: tokens do not
 * outlive the issuer, which is what a development tool should promise.
 */
export class DevTokenIssuer {
  private constructor(
    readonly issuer: string,
    readonly audience: string,
    private readonly privateKey: CryptoKey,
    private readonly publicJwk: JWK,
  ) {}

  static async create(issuer: string, audience: string): Promise<DevTokenIssuer> {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(jwk);
    return new DevTokenIssuer(issuer, audience, privateKey, { ...jwk, kid, alg: 'ES256', use: 'sig' });
  }

  get jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }

  /** The signing key, private, for the OpenID Provider beside it: both sign with one key. */
  async signingJwk(): Promise<JWK> {
    return { ...(await exportJWK(this.privateKey)), kid: this.publicJwk.kid!, alg: 'ES256', use: 'sig' };
  }

  async issue(request: TokenRequest, now: Date = new Date()): Promise<IssuedToken> {
    const iat = Math.floor(now.getTime() / 1000);
    const scope = request.scope.join(' ');
    const accessToken = await new SignJWT({ client_id: request.client, scope })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: this.publicJwk.kid! })
      .setIssuer(this.issuer)
      .setAudience(this.audience)
      .setSubject(request.user)
      .setIssuedAt(iat)
      .setExpirationTime(iat + request.expiresIn)
      .setJti(randomUUID())
      .sign(this.privateKey);
    return { accessToken, expiresIn: request.expiresIn, scope };
  }
}
