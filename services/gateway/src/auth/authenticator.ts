import type { Clock } from '@rs/time';
import { hash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { AppError, basicChallenge, serviceUnavailable, tooManyRequests, unauthorized, type Principal } from '@rs/http';
import { LRUCache } from 'lru-cache';
import type { ApiClient, ClientStore } from '../store/client-store';
import type { RevocationStore } from '../store/revocation-store';
import { parseBasic } from './basic';
import { BearerRejected, IssuerUnavailable, type AccessToken, type BearerVerifier } from './bearer';
import type { FailureThrottle } from './failure-throttle';
import { directoryLookups, secretVerifications } from './metrics';
import { HashLanes } from './hash-lanes';
import { RefreshingCache } from './refreshing-cache';
import { UNKNOWN_CLIENT_HASH, verifySecret } from './secrets';

export const bearerChallenge = (realm: string, description?: string) =>
  description === undefined
    ? `Bearer realm="${realm}"`
    : `Bearer realm="${realm}", error="invalid_token", error_description="${description}"`;
export const insufficientScopeChallenge = (realm: string, scope: string) =>
  `Bearer realm="${realm}", error="insufficient_scope", scope="${scope}"`;

/** `Authorization: Bearer …`, the token possibly empty (docs/api.md "Challenges"). */
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
  /** Secret hashes computed at once (default: half the cores, at least one). */
  hashConcurrency?: number;
  clock?: Clock;
}

/** Verified secrets remembered; each is valid while its client's stored hash is unchanged. */
const VERIFIED_SECRETS = 10_000;
/**
 * Secret hashes computed at once: scrypt takes a core for about 100 ms, and the event loop
 * serving verified clients needs the rest (docs/api.md "No lock-out").
 */
const HASH_CONCURRENCY = Math.max(1, Math.floor(availableParallelism() / 2));
/** Attempts waiting for a hash, over all addresses; more are answered 429 at once. */
const MAX_WAITING_HASHES = 256;

/**
 * A staff member (docs/identity-providers.md "Staff"): acts on any user of its grantors, reads
 * with any role and changes with `write`; `admin` is an admin. No registered client is needed:
 * the member is named by its issuer and `sub`, which is also whose budget it spends.
 */
function staffPrincipal(access: AccessToken, staff: NonNullable<AccessToken['staff']>): Principal {
  const admin = staff.role === 'admin';
  return {
    clientId: access.clientId ?? 'staff',
    grantorId: admin ? null : (staff.grantors[0] ?? null),
    admin,
    scheme: 'staff',
    scopes: [],
    subject: null,
    staff: { grantors: admin ? [] : staff.grantors, write: staff.role !== 'read' },
    person: { issuer: access.issuer, subject: access.subject, name: access.name },
  };
}

const principalOf = (client: ApiClient): Principal => ({
  clientId: client.clientId,
  grantorId: client.grantorId,
  admin: client.admin,
  scheme: 'basic',
  scopes: [],
  subject: null,
});

/**
 * Establishes who calls (docs/api.md "Principals and authorization", 4): Basic credentials of a registered
 * API client, or a Bearer access token issued to a registered client for a user. Every
 * failure is a 401 with the challenge docs/api.md prescribes.
 *
 * Nothing runs once per request that can run once per key: clients are cached and refreshed
 * with a single flight; a secret is verified (scrypt, about 100 ms) once per client hash,
 * however many requests present it at once. Guessing is throttled per client and source
 * address and per address (429), counted before the hash, and only for secrets not verified
 * already, so failures sent by someone else never lock a client out; the hashes computed at
 * once are bounded and shared between addresses in turn (docs/api.md "No lock-out").
 */
export class Authenticator {
  private readonly clients: RefreshingCache<string, ApiClient | null>;
  /** Client id and fingerprint of a secret → the stored hash it was verified against. */
  private readonly verified = new LRUCache<string, string>({ max: VERIFIED_SECRETS });
  private readonly inFlight = new Map<string, Promise<ApiClient | null>>();
  private readonly hashes: HashLanes;

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
    this.hashes = new HashLanes(options.hashConcurrency ?? HASH_CONCURRENCY, MAX_WAITING_HASHES);
  }

  /** `address`: the caller's network address, for throttling guesses. */
  async authenticate(authorization: string | undefined, address: string): Promise<Principal> {
    if (isBearer(authorization)) return this.bearer(authorization!.replace(/^Bearer/i, '').trim(), address);
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
    const key = `${clientId}\u0000${hash('sha256', secret, 'base64')}`;
    // A secret verified before is never throttled nor hashed again while its client's hash stays.
    const verifiedAgainst = this.verified.get(key);
    if (verifiedAgainst !== undefined) {
      const client = await this.clients.get(clientId);
      if (client?.secretHash === verifiedAgainst) return principalOf(client);
    }
    // Requests presenting the same credentials while they are being verified share that one
    // attempt; any other attempt counts before anything is looked up or hashed (docs/api.md).
    let verifying = this.inFlight.get(key);
    if (!verifying) {
      const wait = this.options.throttle.attempt(clientId, address);
      if (wait > 0) throw tooManyRequests('too many failed attempts; try again later', wait);
      verifying = this.verify(key, clientId, secret, address);
      this.inFlight.set(key, verifying);
      void verifying.finally(() => this.inFlight.delete(key)).catch(() => undefined);
    }
    const client = await verifying;
    if (!client) throw unauthorized('invalid credentials', challenge);
    return principalOf(client);
  }

  /** Looks the client up and hashes the secret, in the address's lane; the client, or null when the secret is wrong. */
  private async verify(key: string, clientId: string, secret: string, address: string): Promise<ApiClient | null> {
    const client = await this.clients.get(clientId);
    const secretHash = client?.secretHash ?? UNKNOWN_CLIENT_HASH;
    const hashing = this.hashes.run(address, () => verifySecret(secret, secretHash));
    if (!hashing) throw tooManyRequests('too many verifications under way; try again shortly', 1);
    const valid = await hashing;
    secretVerifications.inc({ outcome: valid ? 'valid' : 'invalid' });
    if (!client || !valid) return null;
    this.options.throttle.succeeded(clientId, address);
    this.verified.set(key, secretHash);
    return client;
  }

  private async bearer(token: string, address: string): Promise<Principal> {
    const { realm, bearer } = this.options;
    const reject = (description: string) =>
      new AppError(401, `invalid token: ${description}`, { 'WWW-Authenticate': bearerChallenge(realm, description) });
    // RFC 6750 3.1: a request without a token gets the challenge without an error code.
    if (!token) throw new AppError(401, 'a Bearer token is required', { 'WWW-Authenticate': bearerChallenge(realm) });
    if (!bearer) throw reject('bearer tokens are not accepted');
    const { throttle } = this.options;
    // Forged tokens spend their sender's failure budget as wrong secrets do (docs/api.md "No
    // lock-out"); an expired or revoked token is an app's slip, not a guess, and counts nothing.
    const refuse = (description: string) => {
      throttle.tokenFailed(address);
      return reject(description);
    };
    let access;
    try {
      access = await bearer.verify(token, () => {
        const wait = throttle.admitToken(address);
        if (wait > 0) throw tooManyRequests('too many failed attempts; try again later', wait);
      });
    } catch (error) {
      if (error instanceof BearerRejected)
        throw error.message === 'expired' ? reject('expired') : refuse(error.message);
      if (error instanceof IssuerUnavailable) throw serviceUnavailable(error.message, 5);
      throw error;
    }
    if (this.options.revocations.isRevoked(access.jti)) throw reject('revoked');
    if (access.staff) return staffPrincipal(access, access.staff);
    const client = access.clientId === null ? null : await this.clients.get(access.clientId);
    // An admin client is named only by an issuer that lists it by id; to any other it is unknown.
    if (!client || (client.admin && !access.clientListed)) throw refuse('unknown client');
    // Client credentials: the client itself, as its Basic credentials would be, within the token's scopes.
    if (access.clientCredentials) return { ...principalOf(client), limitedTo: access.scopes, issuer: access.issuer };
    return {
      clientId: client.clientId,
      grantorId: client.grantorId,
      admin: client.admin,
      scheme: 'bearer',
      scopes: access.scopes,
      subject: access.subject,
      issuer: access.issuer,
    };
  }
}
