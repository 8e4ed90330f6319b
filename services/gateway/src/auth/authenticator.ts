import { createHash } from 'node:crypto';
import { AppError, basicChallenge, tooManyRequests, unauthorized, type Principal } from '@rs/http';
import type { ApiClient, ClientStore } from '../store/client-store';
import type { RevocationStore } from '../store/revocation-store';
import { parseBasic } from './basic';
import { BearerRejected, type BearerVerifier } from './bearer';
import type { FailureThrottle } from './failure-throttle';
import { UNKNOWN_CLIENT_HASH, verifySecret } from './secrets';
import { TtlCache } from './ttl-cache';

export const bearerChallenge = (realm: string, description: string) =>
  `Bearer realm="${realm}", error="invalid_token", error_description="${description}"`;
export const insufficientScopeChallenge = (realm: string, scope: string) =>
  `Bearer realm="${realm}", error="insufficient_scope", scope="${scope}"`;

export interface AuthenticatorOptions {
  clients: ClientStore;
  revocations: RevocationStore;
  bearer: BearerVerifier | null;
  throttle: FailureThrottle;
  realm: string;
  /** How long verified credentials and looked-up clients are trusted without asking the database. */
  cacheTtlMs: number;
}

/**
 * Establishes who calls (DESIGN.md 3 "Principals", 4): Basic credentials of a registered
 * API client, or a Bearer access token issued to a registered client for a user. Every
 * failure is a 401 with the challenge DESIGN.md 3 prescribes; repeated Basic failures for
 * one client are throttled with 429.
 */
export class Authenticator {
  private readonly verified = new TtlCache<string, Principal>();
  private readonly clientCache = new TtlCache<string, ApiClient | null>();

  constructor(private readonly options: AuthenticatorOptions) {}

  get realm(): string {
    return this.options.realm;
  }

  async authenticate(authorization: string | undefined): Promise<Principal> {
    if (authorization && /^Bearer\s/i.test(authorization))
      return this.bearer(authorization.replace(/^Bearer\s+/i, '').trim());
    return this.basic(authorization);
  }

  /** Forget what is cached about a client, after it was changed or deleted here. */
  invalidate(clientId: string): void {
    this.verified.deleteWhere((_key, principal) => principal.clientId === clientId);
    this.clientCache.deleteWhere((key) => key === clientId);
  }

  private async basic(authorization: string | undefined): Promise<Principal> {
    const challenge = basicChallenge(this.options.realm);
    if (!authorization) throw unauthorized('authentication required', challenge);
    const credentials = parseBasic(authorization);
    if (!credentials) throw unauthorized('malformed Basic credentials', challenge);
    const { clientId, secret } = credentials;
    const wait = this.options.throttle.retryAfterSeconds(clientId);
    if (wait > 0) throw tooManyRequests('too many failed attempts for this client; try again later', wait);

    // A hot client does not pay the hash on every request (DESIGN.md 4).
    const cacheKey = `${clientId}\u0000${createHash('sha256').update(secret).digest('base64')}`;
    const cached = this.verified.get(cacheKey);
    if (cached) return cached;

    const client = await this.options.clients.find(clientId);
    const valid = await verifySecret(secret, client?.secretHash ?? UNKNOWN_CLIENT_HASH);
    if (!client || !valid) {
      this.options.throttle.recordFailure(clientId);
      throw unauthorized('invalid credentials', challenge);
    }
    this.options.throttle.recordSuccess(clientId);
    const principal: Principal = {
      clientId,
      grantorId: client.grantorId,
      admin: client.admin,
      scheme: 'basic',
      scopes: [],
      subject: null,
    };
    this.verified.set(cacheKey, principal, this.options.cacheTtlMs);
    return principal;
  }

  private async bearer(token: string): Promise<Principal> {
    const { realm, bearer } = this.options;
    const reject = (description: string) =>
      new AppError(401, `invalid token: ${description}`, { 'WWW-Authenticate': bearerChallenge(realm, description) });
    if (!bearer) throw reject('bearer tokens are not accepted');
    let access;
    try {
      access = await bearer.verify(token);
    } catch (error) {
      if (error instanceof BearerRejected) throw reject(error.message);
      throw error;
    }
    if (access.jti && this.options.revocations.isRevoked(access.jti)) throw reject('revoked');
    const client = await this.client(access.clientId);
    if (!client) throw reject('unknown client');
    return {
      clientId: client.clientId,
      grantorId: client.grantorId,
      admin: client.admin,
      scheme: 'bearer',
      scopes: access.scopes,
      subject: access.subject,
    };
  }

  private async client(clientId: string): Promise<ApiClient | null> {
    const cached = this.clientCache.get(clientId);
    if (cached !== undefined) return cached;
    const client = await this.options.clients.find(clientId);
    this.clientCache.set(clientId, client, this.options.cacheTtlMs);
    return client;
  }
}
