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
  scheme: 'basic' | 'bearer' | 'service';
  scopes: string[];
  /** The user a Bearer token was issued for (its `sub`). */
  subject: string | null;
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
  if (principal.admin) return true;
  return (
    principal.grantorId !== null &&
    (right.grantorId === principal.grantorId || right.serviceProviderId === principal.grantorId)
  );
}
