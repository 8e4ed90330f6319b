import type { RightEntity } from './right';
import { isActive } from './right';

/**
 * Signed right tokens (docs/api.md): what a token says of a right, and which signing keys
 * are still published. Pure: no I/O, no keys.
 */

export interface RightTokenClaims {
  iss: string;
  sub: string;
  jti: string;
  rid: string;
  sku: string;
  grantorId: string;
  serviceProviderId: string | null;
  generation: string;
  used: boolean;
  /** A metered right's units and those left as of issue (docs/api.md "Usage"); null on a plain right. */
  quantity: number | null;
  remaining: number | null;
  iat: number;
  nbf: number;
  exp: number;
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * The claims of a token for `right` at `now`, or null when the right is not active now (409).
 * It is valid from the interval's start until the interval's end or `ttlS` after issue,
 * whichever comes first.
 */
export function rightTokenClaims(
  right: RightEntity,
  now: Date,
  options: { issuer: string; ttlS: number; jti: string },
): RightTokenClaims | null {
  if (!isActive(right, now)) return null;
  const iat = seconds(now);
  return {
    iss: options.issuer,
    sub: right.userId,
    jti: options.jti,
    rid: right.rightId,
    sku: right.sku,
    grantorId: right.grantorId,
    serviceProviderId: right.serviceProviderId,
    generation: String(right.generation),
    used: right.used,
    quantity: right.quantity,
    remaining: right.remaining,
    iat,
    nbf: seconds(right.start),
    exp: Math.min(Math.ceil(right.end.getTime() / 1000), iat + options.ttlS),
  };
}

export interface SigningKeyLife {
  kid: string;
  createdAt: Date;
  /** When a newer key replaced it: it signs no more, and its tokens live at most `ttlS` longer. */
  retiredAt: Date | null;
}

/** The key that signs now: the newest one not retired. */
export function signingKey<K extends SigningKeyLife>(keys: readonly K[]): K | null {
  return keys.filter((key) => key.retiredAt === null).sort((a, b) => +b.createdAt - +a.createdAt)[0] ?? null;
}

/** The keys whose tokens may still be valid at `now`: every key not retired more than `ttlS` ago. */
export function publishedKeys<K extends SigningKeyLife>(keys: readonly K[], now: Date, ttlS: number): K[] {
  return keys.filter((key) => key.retiredAt === null || key.retiredAt.getTime() + ttlS * 1000 > now.getTime());
}
