import { hash } from 'node:crypto';
import { decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';
import type { Logger } from '@rs/logging';
import type { Clock } from '@rs/time';
import { LRUCache } from 'lru-cache';
import { hasControls, mapClaims, type StaffRole } from '../domain/claims';
import { IssuerKeys, IssuerUnavailable } from './issuer-keys';
import type { IssuerEntry } from './issuers';
import { bearerVerifications } from './metrics';

export { IssuerUnavailable } from './issuer-keys';

/** A Bearer token that is refused; `description` goes into the challenge's error_description. */
export class BearerRejected extends Error {
  override readonly name = 'BearerRejected';
}

export interface AccessToken {
  /** The issuer that signed it. */
  issuer: string;
  /** The API client it was issued to; a staff member's token may name none. */
  clientId: string | null;
  /**
   * Its issuer's entry lists that client by id (not only as `"*"`): only then may the client be
   * an admin (docs/identity-providers.md "Issuers stay in their lane").
   */
  clientListed: boolean;
  /** The user it acts for; a staff member's: the member (`sub`). */
  subject: string;
  /** A staff member's role and grantors (docs/identity-providers.md "Staff"), or null. */
  staff: { role: StaffRole; grantors: string[] } | null;
  /** The person's `name` or `email`, when the token carries one. */
  name: string | null;
  /** Issued to its client for itself (client credentials): it acts as its client, within its scopes. */
  clientCredentials: boolean;
  scopes: string[];
  jti: string;
  /** When it expires, in seconds since the epoch. */
  exp: number;
}

export interface BearerVerifierOptions {
  issuers: IssuerEntry[];
  /** JWT_MAX_TOKEN_LIFETIME_S: the longest lifetime a token may have. */
  maxLifetimeSeconds: number;
  logger: Logger;
  clockToleranceSeconds?: number;
  jwksTimeoutMs?: number;
  /** How soon an issuer unreachable at start is tried again. */
  retryMs?: number;
  /** How often each issuer's keys are fetched again (an hour unless given). */
  refreshMs?: number;
  clock?: Clock;
}

/** The clock tolerance on `exp` and `nbf` unless another is given. */
export const DEFAULT_CLOCK_TOLERANCE_S = 30;
/**
 * Header `typ` values of an access token (RFC 9068 2.1, RFC 7519 5.1); compared without case
 * and the `application/` prefix (RFC 8725 3.11). Absent is accepted too. Any other names
 * another kind of token (a right token, `right+jwt`; an ID token…), never an access token.
 */
const ACCESS_TOKEN_TYPES = new Set(['jwt', 'at+jwt']);
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_TOKEN_LENGTH = 8192;
/** Verified tokens remembered (by their hash) until they expire. */
const VERIFIED_TOKENS = 10_000;

/**
 * Verifies access tokens of the trusted issuers with jose (docs/identity-providers.md): the
 * token's `iss` picks its issuer's entry (exact match), whose keys alone may verify it, with
 * that entry's audience; `exp`, `nbf` with a small clock tolerance; `jti` (so that any token can
 * be revoked) required; the header `typ` of an access token; a lifetime (`exp` − `iat`, or
 * `exp` − now without `iat`) of at most `maxLifetimeSeconds`. The client, user and scopes come
 * from the claims the entry names. A token verified once is remembered by its hash until it
 * expires, so a busy app pays the signature once (its revocation is checked on every use).
 */
export class BearerVerifier {
  private readonly issuers = new Map<string, { entry: IssuerEntry; keys: IssuerKeys }>();
  private readonly verified = new LRUCache<string, AccessToken>({ max: VERIFIED_TOKENS });

  constructor(private readonly options: BearerVerifierOptions) {
    for (const entry of options.issuers)
      this.issuers.set(entry.issuer, {
        entry,
        keys: new IssuerKeys({
          issuer: entry.issuer,
          jwksUri: entry.jwksUri,
          publicKey: entry.publicKey,
          logger: options.logger,
          ...(options.jwksTimeoutMs ? { timeoutMs: options.jwksTimeoutMs } : {}),
          ...(options.retryMs ? { retryMs: options.retryMs } : {}),
          ...(options.refreshMs ? { refreshMs: options.refreshMs } : {}),
          ...(options.clock ? { clock: options.clock } : {}),
        }),
      });
  }

  /** Fetches every issuer's keys at once; one that cannot be reached is retried in the background. */
  async start(): Promise<void> {
    await Promise.all([...this.issuers.values()].map(({ keys }) => keys.start()));
  }

  stop(): void {
    for (const { keys } of this.issuers.values()) keys.stop();
  }

  /**
   * `admit` runs before a token not verified already is checked (the caller's failure budget
   * may refuse it); a token verified once never waits for it.
   */
  async verify(token: string, admit: () => void = () => undefined): Promise<AccessToken> {
    if (token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) throw new BearerRejected('malformed');
    const tokenHash = hash('sha256', token, 'base64url');
    const now = Math.floor((this.options.clock?.() ?? new Date()).getTime() / 1000);
    const remembered = this.verified.get(tokenHash);
    if (remembered && remembered.exp + this.tolerance > now) {
      bearerVerifications.inc({ outcome: 'remembered' });
      return remembered;
    }
    admit();
    const access = await this.check(token, now);
    bearerVerifications.inc({ outcome: 'verified' });
    this.verified.set(tokenHash, access);
    return access;
  }

  private async check(token: string, now: number): Promise<AccessToken> {
    let issuer: unknown;
    try {
      issuer = decodeJwt(token).iss;
    } catch {
      throw new BearerRejected('malformed');
    }
    const trusted = typeof issuer === 'string' ? this.issuers.get(issuer) : undefined;
    if (!trusted) throw new BearerRejected('unknown issuer');
    const { entry, keys } = trusted;
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      const options = {
        issuer: entry.issuer,
        audience: entry.audience,
        algorithms: keys.algorithms,
        clockTolerance: this.tolerance,
        requiredClaims: ['exp', 'jti'],
        ...(this.options.clock ? { currentDate: this.options.clock() } : {}),
      };
      const key = keys.key;
      ({
        payload,
        protectedHeader: { typ },
      } = typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options));
    } catch (error) {
      if (error instanceof IssuerUnavailable) throw error;
      throw new BearerRejected(describe(error));
    }
    if (typ !== undefined && !ACCESS_TOKEN_TYPES.has(typ.toLowerCase().replace(/^application\//, '')))
      throw new BearerRejected('not an access token');
    // A token issued "later" would outlive any revocation kept for the longest lifetime: its
    // lifetime counts from now as well as from its `iat` (docs/identity-providers.md).
    if (payload.iat !== undefined && payload.iat > now + this.tolerance)
      throw new BearerRejected('issued in the future');
    const lifetime = Math.max(payload.exp! - (payload.iat ?? now), payload.exp! - now);
    if (lifetime > this.options.maxLifetimeSeconds) throw new BearerRejected('lifetime too long');
    const mapped = mapClaims(payload as Record<string, unknown>, entry);
    if (mapped.staff) {
      if (typeof payload.sub !== 'string' || payload.sub === '' || hasControls(payload.sub))
        throw new BearerRejected('sub missing');
      if (mapped.staff.role !== 'admin' && mapped.staff.grantors.length === 0)
        throw new BearerRejected(`a staff token names no grantor (${entry.staff!.grantor})`);
      // A provider chosen by some grantors speaks for their staff only; the platform's operators
      // (admins) come from a provider that serves every grantor.
      const served = entry.staff!.grantors;
      if (!served.includes('*')) {
        if (mapped.staff.role === 'admin') throw new BearerRejected('admin staff not served by this issuer');
        if (!mapped.staff.grantors.every((grantor) => served.includes(grantor)))
          throw new BearerRejected('grantor not served by this issuer');
      }
      if (mapped.staff.grantors.some(hasControls)) throw new BearerRejected('grantor not served by this issuer');
    } else {
      if (mapped.clientId === null) throw new BearerRejected(`client missing (${entry.claims.client.join(', ')})`);
      if (entry.clients !== '*' && !entry.clients.includes(mapped.clientId)) throw new BearerRejected('unknown client');
      if (mapped.subject === null && !mapped.clientCredentials)
        throw new BearerRejected(`${entry.claims.user} missing`);
    }
    return {
      issuer: entry.issuer,
      clientId: mapped.clientId,
      clientListed: mapped.clientId !== null && entry.clients !== '*' && entry.clients.includes(mapped.clientId),
      subject: mapped.staff ? (payload.sub as string) : (mapped.subject ?? mapped.clientId!),
      staff: mapped.staff,
      name: mapped.name,
      clientCredentials: !mapped.staff && mapped.clientCredentials,
      scopes: mapped.scopes,
      jti: payload.jti!,
      exp: payload.exp!,
    };
  }

  private get tolerance(): number {
    return this.options.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_S;
  }
}

function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.reason === 'missing') return `${error.claim} missing`;
    if (error.claim === 'nbf') return 'not yet valid';
    if (error.claim === 'iss') return 'wrong issuer';
    if (error.claim === 'aud') return 'wrong audience';
    return `invalid ${error.claim} claim`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return 'algorithm not allowed';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'invalid signature';
  if (error instanceof errors.JWKSNoMatchingKey) return 'unknown signing key';
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return 'signing keys unavailable';
  if (error instanceof errors.JOSEError) return 'malformed';
  // Network failures while fetching the key set.
  return 'signing keys unavailable';
}
