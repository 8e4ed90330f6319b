/**
 * Who is calling, as the gateway established it (docs/api.md "Principals and authorization"). Services
 * trust nothing else: the gateway passes it in a short-lived internal JWT it signs with
 * INTERNAL_TOKEN_SECRET (docs/api.md). A service calling another service signs its own,
 * with `scheme: 'service'`. Access rules (each service's `domain/access.ts`) decide on it.
 */
export interface Principal {
  clientId: string;
  grantorId: string | null;
  admin: boolean;
  scheme: 'basic' | 'bearer' | 'service' | 'staff';
  scopes: string[];
  /** The user a Bearer token was issued for (its `sub`). */
  subject: string | null;
  /**
   * A client-credentials token (docs/identity-providers.md): it acts as its client, like its
   * Basic credentials would, but only on the routes whose scope it carries (these).
   */
  limitedTo?: string[];
  /**
   * A staff member's reach (docs/identity-providers.md "Staff"): the grantors whose users it
   * acts on, and whether it may change (role `write`) or only read. An `admin` member is
   * `admin` and needs no grantor.
   */
  staff?: { grantors: string[]; write: boolean };
  /** The person who acts, when one does: a staff member, named as their identity provider names them. */
  person?: Person;
  /** The identity provider whose token established it (a Bearer caller); the gateway's alone. */
  issuer?: string;
}

/** A person acting through a token of an identity provider. */
export interface Person {
  issuer: string;
  subject: string;
  /** `name` or `email` of the token, when it carries one. */
  name: string | null;
}

/**
 * Whether the principal acts for grantor `grantorId`: its client's grantor, or one of a staff
 * member's grantors. Pure.
 */
export function actsFor(principal: Principal, grantorId: string | null): boolean {
  if (grantorId === null) return false;
  if (principal.scheme === 'staff') return principal.staff?.grantors.includes(grantorId) ?? false;
  return principal.grantorId === grantorId;
}

/**
 * Whether the principal may change what grantor `grantorId` owns (docs/api.md "Principals and
 * authorization"): an admin, that grantor's client with its Basic credentials, or a staff
 * member of that grantor with the `write` role. Pure.
 */
export function changesFor(principal: Principal, grantorId: string): boolean {
  if (principal.admin) return true;
  if (principal.scheme === 'basic') return principal.grantorId === grantorId;
  return principal.scheme === 'staff' && principal.staff?.write === true && actsFor(principal, grantorId);
}

/**
 * docs/api.md "Principals and authorization": who may read a right. A non-admin client with
 * grantor G reads the rights with grantorId G or serviceProviderId G; an admin reads all. The
 * rights service and the gateway's entitlement checks (docs/api.md) decide with it. Pure.
 */
export function mayReadRight(
  principal: Principal,
  right: { grantorId: string; serviceProviderId: string | null },
): boolean {
  return principal.admin || actsFor(principal, right.grantorId) || actsFor(principal, right.serviceProviderId);
}
