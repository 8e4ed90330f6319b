import type { Clock } from '@rs/time';
import { createHash } from 'node:crypto';
import { AppError, basicChallenge, tooManyRequests, unauthorized, type Principal } from '@rs/http';
import { LRUCache } from 'lru-cache';
import type { ApiClient, ClientStore } from '../store/client-store';
import type { RevocationStore } from '../store/revocation-store';
import { parseBasic } from './basic';
import { BearerRejected, type BearerVerifier } from './bearer';
import type { FailureThrottle } from './failure-throttle';
import { directoryLookups, secretVerifications } from './metrics';
import { RefreshingCache } from './refreshing-cache';
import { UNKNOWN_CLIENT_HASH, verifySecret } from './secrets';

export const bearerChallenge = (realm: string, description?: string) =>
  description === undefined
    ? `Bearer realm="${realm}"`
    : `Bearer realm="${realm}", error="invalid_token", error_description="${description}"`;
export const insufficientScopeChallenge = (realm: string, scope: string) =>
  `Bearer realm="${realm}", error="insufficient_scope", scope="${scope}"`;

/** `Authorization: Bearer …`, the token possibly empty (DESIGN.md 3 "Challenges"). */
export const isBearer = (authorization: string | undefined): boolean =>
  authorization !== undefined && /^Bearer(?:\s|$)/i.test(authorization);

export interface AuthenticatorOptions {
  clients: ClientStore;
  revocations: RevocationStore;
  bearer: BearerVerifier | null;
  throttle: FailureThrottle;
  realm: string;
  /** How long a looked-up client is used without asking the database again (then refreshed once, in the background). */
  cacheTtlMs: number;
  clock?: Clock;
}

/** Verified secrets remembered; each is valid while its client's stored hash is unchanged. */
const VERIFIED_SECRETS = 10_000;

/**
 * Establishes who calls (DESIGN.md 3 "Principals", 4): Basic credentials of a registered
 * API client, or a Bearer access token issued to a registered client for a user. Every
 * failure is a 401 with the challenge DESIGN.md 3 prescribes.
 *
 * Nothing runs once per request that can run once per key (issue 9): clients are cached and
 * refreshed with a single flight; a secret is verified (scrypt, tens of milliseconds) once
 * per client hash, however many requests present it at once. Guessing is throttled per
 * client and source address (429), but only for secrets not verified already, so failures
 * sent by someone else never lock a client out.
 */
export class Authenticator {
  private readonly clients: RefreshingCache<string, ApiClient | null>;
  /** Keys: client id, fingerprint of the secret, the stored hash it was verified against. */
  private readonly verified: LRUCache<string, true, { secret: string; secretHash: string }>;

  constructor(private readonly options: AuthenticatorOptions) {
    this.clients = new RefreshingCache({
      load: (clientId) => {
        directoryLookups.inc({ directory: 'clients' });
        return options.clients.find(clientId);
      },
      freshMs: options.cacheTtlMs,
      staleMs: options.cacheTtlMs,
      max: 10_000,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    this.verified = new LRUCache({
      max: VERIFIED_SECRETS,
      fetchMethod: async (_key, _stale, { context }) => {
        const valid = await verifySecret(context.secret, context.secretHash);
        secretVerifications.inc({ outcome: valid ? 'valid' : 'invalid' });
        return valid ? true : undefined;
      },
    });
  }

  get realm(): string {
    return this.options.realm;
  }

  /** `address`: the caller's network address, for throttling guesses. */
  async authenticate(authorization: string | undefined, address: string): Promise<Principal> {
    if (isBearer(authorization)) return this.bearer(authorization!.replace(/^Bearer/i, '').trim());
    return this.basic(authorization, address);
  }

  /** Forget what is cached about a client, after it was changed or deleted here. */
  invalidate(clientId: string): void {
    this.clients.delete(clientId);
  }

  private async basic(authorization: string | undefined, address: string): Promise<Principal> {
    const challenge = basicChallenge(this.options.realm);
    if (!authorization) throw unauthorized('authentication required', challenge);
    const credentials = parseBasic(authorization);
    if (!credentials) throw unauthorized('malformed Basic credentials', challenge);
    const { clientId, secret } = credentials;
    const client = await this.clients.get(clientId);
    const secretHash = client?.secretHash ?? UNKNOWN_CLIENT_HASH;
    const fingerprint = createHash('sha256').update(secret).digest('base64');
    const key = `${clientId}\u0000${fingerprint}\u0000${secretHash}`;

    if (!(client && this.verified.get(key))) {
      const { throttle } = this.options;
      const wait = throttle.retryAfterSeconds(clientId, address);
      if (wait > 0) throw tooManyRequests('too many failed attempts; try again later', wait);
      // One scrypt per key in flight; concurrent requests with the same credentials share it.
      const valid = await this.verified.fetch(key, { context: { secret, secretHash } });
      if (!client || !valid) {
        throttle.recordFailure(clientId, address);
        throw unauthorized('invalid credentials', challenge);
      }
      throttle.recordSuccess(clientId, address);
    }
    return {
      clientId,
      grantorId: client.grantorId,
      admin: client.admin,
      scheme: 'basic',
      scopes: [],
      subject: null,
    };
  }

  private async bearer(token: string): Promise<Principal> {
    const { realm, bearer } = this.options;
    const reject = (description: string) =>
      new AppError(401, `invalid token: ${description}`, { 'WWW-Authenticate': bearerChallenge(realm, description) });
    // RFC 6750 3.1: a request without a token gets the challenge without an error code.
    if (!token) throw new AppError(401, 'a Bearer token is required', { 'WWW-Authenticate': bearerChallenge(realm) });
    if (!bearer) throw reject('bearer tokens are not accepted');
    let access;
    try {
      access = await bearer.verify(token);
    } catch (error) {
      if (error instanceof BearerRejected) throw reject(error.message);
      throw error;
    }
    if (access.jti && this.options.revocations.isRevoked(access.jti)) throw reject('revoked');
    const client = await this.clients.get(access.clientId);
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
}
