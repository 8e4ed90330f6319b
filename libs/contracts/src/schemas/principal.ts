/**
 * Who is calling, as the gateway established it (DESIGN.md 3 "Principals"). Services
 * trust nothing else: the gateway passes it in a short-lived internal JWT it signs with
 * INTERNAL_TOKEN_SECRET (DESIGN.md 4). A service calling another service signs its own,
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
