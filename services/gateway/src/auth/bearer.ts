import { createPublicKey, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';

/** A Bearer token that is refused; `description` goes into the challenge's error_description. */
export class BearerRejected extends Error {
  override readonly name = 'BearerRejected';
}

export interface AccessToken {
  clientId: string;
  subject: string;
  scopes: string[];
  jti: string;
}

export interface BearerVerifierOptions {
  jwksUrl?: string | undefined;
  publicKeyPem?: string | undefined;
  issuer: string;
  audience: string;
  clockToleranceSeconds?: number;
  jwksTimeoutMs?: number;
  /** JWT_MAX_TOKEN_LIFETIME_S: the longest lifetime a token may have. */
  maxLifetimeSeconds: number;
}

/** The clock tolerance on `exp` and `nbf` unless another is given. */
export const DEFAULT_CLOCK_TOLERANCE_S = 30;
/**
 * Header `typ` values of an access token (RFC 9068 2.1, RFC 7519 5.1); compared without case
 * and the `application/` prefix (RFC 8725 3.11). Absent is accepted too. Any other names
 * another kind of token (a right token, `right+jwt`; an ID token…), never an access token.
 */
const ACCESS_TOKEN_TYPES = new Set(['jwt', 'at+jwt']);

/** Asymmetric algorithms only: `none` and HMAC (a shared secret) are never accepted. */
const ALGORITHMS_BY_KEY: Record<string, string[]> = {
  rsa: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'],
  'rsa-pss': ['PS256', 'PS384', 'PS512'],
  ec: ['ES256', 'ES384', 'ES512'],
  ed25519: ['EdDSA', 'Ed25519'],
};
const ALL_ALGORITHMS = [...new Set(Object.values(ALGORITHMS_BY_KEY).flat())];
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_TOKEN_LENGTH = 8192;

/**
 * Verifies RFC 9068 access tokens with jose (docs/api.md): signature against the remote
 * JWKS (cached; refetched when a token names an unknown `kid`) or a static public key;
 * `iss`, `aud`, `exp`, `nbf` with a small clock tolerance; `sub`, `jti` (so that any token can
 * be revoked) and `client_id` required; the header `typ` of an access token; a lifetime
 * (`exp` − `iat`, or `exp` − now without `iat`) of at most `maxLifetimeSeconds`.
 */
export class BearerVerifier {
  private readonly key: KeyObject | JWTVerifyGetKey;
  private readonly algorithms: string[];

  constructor(private readonly options: BearerVerifierOptions) {
    if (options.jwksUrl) {
      this.key = createRemoteJWKSet(new URL(options.jwksUrl), {
        timeoutDuration: options.jwksTimeoutMs ?? 2_000,
        cooldownDuration: 30_000,
        cacheMaxAge: 10 * 60_000,
      });
      this.algorithms = ALL_ALGORITHMS;
    } else if (options.publicKeyPem) {
      const key = createPublicKey(options.publicKeyPem);
      this.key = key;
      this.algorithms = ALGORITHMS_BY_KEY[key.asymmetricKeyType ?? ''] ?? [];
      if (this.algorithms.length === 0)
        throw new Error(`JWT_PUBLIC_KEY: unsupported key type ${key.asymmetricKeyType}`);
    } else {
      throw new Error('BearerVerifier needs JWT_JWKS_URL or JWT_PUBLIC_KEY');
    }
  }

  async verify(token: string): Promise<AccessToken> {
    if (token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) throw new BearerRejected('malformed');
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      const options = {
        issuer: this.options.issuer,
        audience: this.options.audience,
        algorithms: this.algorithms,
        clockTolerance: this.options.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_S,
        requiredClaims: ['exp', 'sub', 'jti'],
      };
      ({
        payload,
        protectedHeader: { typ },
      } =
        typeof this.key === 'function'
          ? await jwtVerify(token, this.key, options)
          : await jwtVerify(token, this.key, options));
    } catch (error) {
      throw new BearerRejected(describe(error));
    }
    if (typ !== undefined && !ACCESS_TOKEN_TYPES.has(typ.toLowerCase().replace(/^application\//, '')))
      throw new BearerRejected('not an access token');
    const lifetime = payload.exp! - (payload.iat ?? Math.floor(Date.now() / 1000));
    if (lifetime > this.options.maxLifetimeSeconds) throw new BearerRejected('lifetime too long');
    const clientId = payload.client_id;
    if (typeof clientId !== 'string' || clientId === '') throw new BearerRejected('client_id missing');
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new BearerRejected('sub missing');
    return {
      clientId,
      subject: payload.sub,
      scopes: scopesOf(payload),
      jti: payload.jti!,
    };
  }
}

/** Scopes from `scope` (space separated, RFC 9068) or `scp` (a list or a string). */
function scopesOf(payload: JWTPayload): string[] {
  const raw = payload.scope ?? payload.scp;
  if (typeof raw === 'string') return raw.split(' ').filter(Boolean);
  if (Array.isArray(raw)) return raw.filter((scope): scope is string => typeof scope === 'string');
  return [];
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
