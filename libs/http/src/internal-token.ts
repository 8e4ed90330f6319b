import type { RequestHandler } from 'express';
import { decodeJwt, jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Principal } from '@rs/contracts';
import { unauthorized } from './errors';

export type { Principal };

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      principal: Principal;
    }
  }
}

const ISSUER = 'rs-internal';
const AUDIENCE = 'rs-services';
const ALGORITHM = 'HS256';
export const INTERNAL_TOKEN_TTL_SECONDS = 60;
/** Header that carries the internal token; clients' own Authorization never reaches a service. */
export const INTERNAL_TOKEN_HEADER = 'x-internal-token';
/**
 * Set by the gateway only (a client's is dropped): the id a create must give its resource,
 * derived from the client and its Idempotency-Key (DESIGN.md 8).
 */
export const RESOURCE_ID_HEADER = 'x-rs-resource-id';

const keyOf = (secret: string) => new TextEncoder().encode(secret);

/**
 * Signs internal tokens, reusing one per principal for half its life so the hot path
 * does not sign on every request.
 */
export class InternalTokenSigner {
  private readonly key: Uint8Array;
  private readonly cache = new LRUCache<string, { token: string; renewAt: number }>({ max: 10_000 });

  constructor(
    secret: string,
    private readonly issuerService: string,
    private readonly ttlSeconds = INTERNAL_TOKEN_TTL_SECONDS,
  ) {
    this.key = keyOf(secret);
  }

  async tokenFor(principal: Principal): Promise<string> {
    const cacheKey = JSON.stringify(principal);
    const now = Date.now();
    const cached = this.cache.get(cacheKey);
    if (cached && cached.renewAt > now) return cached.token;
    const token = await new SignJWT({
      cid: principal.clientId,
      gid: principal.grantorId,
      adm: principal.admin,
      sch: principal.scheme,
      scp: principal.scopes,
      usr: principal.subject,
      svc: this.issuerService,
    })
      .setProtectedHeader({ alg: ALGORITHM })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
    this.cache.set(cacheKey, { token, renewAt: now + (this.ttlSeconds * 1000) / 2 });
    return token;
  }
}

export async function verifyInternalToken(secret: string | Uint8Array, token: string): Promise<Principal> {
  const { payload } = await jwtVerify(token, typeof secret === 'string' ? keyOf(secret) : secret, {
    issuer: ISSUER,
    audience: AUDIENCE,
    algorithms: [ALGORITHM],
    clockTolerance: 5,
  });
  return {
    clientId: String(payload.cid),
    grantorId: typeof payload.gid === 'string' ? payload.gid : null,
    admin: payload.adm === true,
    scheme: payload.sch === 'bearer' || payload.sch === 'service' ? payload.sch : 'basic',
    scopes: Array.isArray(payload.scp) ? payload.scp.map(String) : [],
    subject: typeof payload.usr === 'string' ? payload.usr : null,
  };
}

const INTERNAL_CHALLENGE = 'Bearer realm="internal", error="invalid_token"';

/** For internal routes that only the platform's own services may call (never forwarded by the gateway). */
export function requireServiceCaller(principal: Principal): void {
  if (principal.scheme !== 'service') throw unauthorized("for the platform's services only", INTERNAL_CHALLENGE);
}

/**
 * Refuses every request that did not come through the gateway (or another service).
 * A verified token is remembered until it expires (the gateway reuses one per principal for
 * half its life), so the hot path verifies a signature once per principal and token, not
 * once per request.
 */
export function requireInternalToken(secret: string): RequestHandler {
  const key = keyOf(secret);
  const verified = new LRUCache<string, Principal>({ max: 10_000, ttl: INTERNAL_TOKEN_TTL_SECONDS * 1000 });
  return async (req, res, next) => {
    const token = req.get(INTERNAL_TOKEN_HEADER);
    if (!token) return next(unauthorized('this service is reachable only through the gateway', INTERNAL_CHALLENGE));
    const known = verified.get(token);
    if (known) {
      res.locals.principal = known;
      return next();
    }
    try {
      res.locals.principal = await verifyInternalToken(key, token);
    } catch {
      return next(unauthorized('invalid internal token', INTERNAL_CHALLENGE));
    }
    const expiresInMs = (decodeJwt(token).exp ?? 0) * 1000 - Date.now();
    if (expiresInMs > 0) verified.set(token, res.locals.principal, { ttl: expiresInMs });
    next();
  };
}
