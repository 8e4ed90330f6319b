import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';
import type { SecretRing } from '@rs/config';
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
/** The audience of an internal token for `service`: it is accepted there and nowhere else (docs/security.md). */
const audienceOf = (service: string) => `rs-${service}`;
const ALGORITHM = 'HS256';
export const INTERNAL_TOKEN_TTL_SECONDS = 60;
/** Header that carries the internal token; clients' own Authorization never reaches a service. */
export const INTERNAL_TOKEN_HEADER = 'x-internal-token';
/**
 * Set by the gateway only (a client's is dropped): the id a create must give its resource,
 * derived from the client and its Idempotency-Key (docs/api.md).
 */
export const RESOURCE_ID_HEADER = 'x-rs-resource-id';

const keyOf = (secret: string) => new TextEncoder().encode(secret);
/** The `kid` of tokens signed with `secret`: names the key without saying anything of it. */
const keyIdOf = (secret: string) =>
  createHash('sha256').update(`rs-internal-token-key\0${secret}`).digest('base64url').slice(0, 16);

/**
 * The keys a service accepts internal tokens from: tokens signed with the current secret or,
 * while it is set, the previous one, so that pods with the old and the new secret call each
 * other without a 401 during a rolling rotation. A token's `kid` picks its key; a token
 * naming no key of the ring is refused.
 */
export class InternalTokenKeys {
  private readonly keys: Array<{ id: string; key: Uint8Array }>;

  constructor(secrets: SecretRing | string) {
    const { current, previous } = typeof secrets === 'string' ? { current: secrets, previous: null } : secrets;
    this.keys = [current, ...(previous ? [previous] : [])].map((secret) => ({
      id: keyIdOf(secret),
      key: keyOf(secret),
    }));
  }

  /** The key `token`'s `kid` names, or none. */
  for(token: string): Uint8Array | undefined {
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return undefined; // not a JWT
    }
    return this.keys.find(({ id }) => id === kid)?.key;
  }
}

/**
 * Signs internal tokens, reusing one per principal for half its life so the hot path
 * does not sign on every request.
 */
export class InternalTokenSigner {
  private readonly key: Uint8Array;
  private readonly keyId: string;
  private readonly cache = new LRUCache<string, { token: string; renewAt: number }>({ max: 10_000 });

  constructor(
    secret: string,
    private readonly issuerService: string,
    private readonly ttlSeconds = INTERNAL_TOKEN_TTL_SECONDS,
  ) {
    this.key = keyOf(secret);
    this.keyId = keyIdOf(secret);
  }

  /** A token for `principal` addressed to `service`, the one service that will accept it. */
  async tokenFor(principal: Principal, service: string): Promise<string> {
    const cacheKey = `${service}\n${JSON.stringify(principal)}`;
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
      ...(principal.staff ? { stf: principal.staff } : {}),
      ...(principal.person ? { prs: principal.person } : {}),
      svc: this.issuerService,
    })
      .setProtectedHeader({ alg: ALGORITHM, kid: this.keyId })
      .setIssuer(ISSUER)
      .setAudience(audienceOf(service))
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.key);
    this.cache.set(cacheKey, { token, renewAt: now + (this.ttlSeconds * 1000) / 2 });
    return token;
  }
}

/**
 * The principal of an internal token signed with one of `keys` and addressed to `service`;
 * throws when none verifies it.
 */
export async function verifyInternalToken(keys: InternalTokenKeys, token: string, service: string): Promise<Principal> {
  const key = keys.for(token);
  if (!key) throw new InternalTokenRefused('the token names no key of this service');
  return principalOf(await verify(key, token, service));
}

/** An internal token that names no key this service holds. */
export class InternalTokenRefused extends Error {}

async function verify(key: Uint8Array, token: string, service: string) {
  const { payload } = await jwtVerify(token, key, {
    issuer: ISSUER,
    audience: audienceOf(service),
    algorithms: [ALGORITHM],
    clockTolerance: 5,
  });
  return payload;
}

function principalOf(payload: Awaited<ReturnType<typeof verify>>): Principal {
  return {
    clientId: String(payload.cid),
    grantorId: typeof payload.gid === 'string' ? payload.gid : null,
    admin: payload.adm === true,
    scheme: payload.sch === 'bearer' || payload.sch === 'service' || payload.sch === 'staff' ? payload.sch : 'basic',
    scopes: Array.isArray(payload.scp) ? payload.scp.map(String) : [],
    subject: typeof payload.usr === 'string' ? payload.usr : null,
    ...staffOf(payload),
  };
}

/** A staff member's reach and person, as the gateway signed them (docs/identity-providers.md "Staff"). */
function staffOf(payload: Awaited<ReturnType<typeof verify>>): Pick<Principal, 'staff' | 'person'> {
  const staff = payload.stf as { grantors?: unknown; write?: unknown } | undefined;
  const person = payload.prs as { issuer?: unknown; subject?: unknown; name?: unknown } | undefined;
  return {
    ...(staff && Array.isArray(staff.grantors)
      ? { staff: { grantors: staff.grantors.map(String), write: staff.write === true } }
      : {}),
    ...(person && typeof person.issuer === 'string' && typeof person.subject === 'string'
      ? {
          person: {
            issuer: person.issuer,
            subject: person.subject,
            name: typeof person.name === 'string' ? person.name : null,
          },
        }
      : {}),
  };
}

export const INTERNAL_CHALLENGE = 'Bearer realm="internal", error="invalid_token"';

/** For internal routes that only the platform's own services may call (never forwarded by the gateway). */
export function requireServiceCaller(principal: Principal): void {
  if (principal.scheme !== 'service') throw unauthorized("for the platform's services only", INTERNAL_CHALLENGE);
}

/**
 * Refuses every request that did not come through the gateway (or another service) with a
 * token addressed to this `service`: one that was signed for another service is refused here.
 * A verified token is remembered until it expires (the gateway reuses one per principal for
 * half its life), so the hot path verifies a signature once per principal and token, not
 * once per request.
 */
export function requireInternalToken(secrets: SecretRing | string, service: string): RequestHandler {
  const keys = new InternalTokenKeys(secrets);
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
      res.locals.principal = await verifyInternalToken(keys, token, service);
    } catch {
      return next(unauthorized('invalid internal token', INTERNAL_CHALLENGE));
    }
    const expiresInMs = (decodeJwt(token).exp ?? 0) * 1000 - Date.now();
    if (expiresInMs > 0) verified.set(token, res.locals.principal, { ttl: expiresInMs });
    next();
  };
}
