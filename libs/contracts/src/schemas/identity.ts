import { storableText } from './formats';
import { z } from 'zod';
import { PartyId } from './catalog';

/** An API client's id: a simple token without ":" (it is the user part of Basic credentials). */
export const ClientId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "-" or "_"');

/** A user's connectId as it appears in paths. */
export const ConnectId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,127}$/, 'must be 1-128 letters, digits, ".", "_", "@", ":", "+" or "-"');

/** Body of `PUT /admin/clients/{clientId}` (docs/operations.md). */
export const ClientBody = z.strictObject({
  secret: z.string().min(12, 'must be at least 12 characters').max(256),
  grantorId: PartyId,
  admin: z.boolean().optional(),
});
export type ClientBody = z.infer<typeof ClientBody>;

/** An API client as the admin API shows it: never its secret or hash. */
export const ClientView = z.object({
  clientId: ClientId,
  grantorId: z.string(),
  admin: z.boolean(),
  createdAt: z.iso.datetime({ offset: true }),
  updatedAt: z.iso.datetime({ offset: true }),
});
export const ClientList = z.object({ clients: z.array(ClientView) });

/** The id (`jti`) of an access token to revoke. */
export const Jti = storableText(256).min(1);

/** Body of `PUT /admin/revoked-tokens/{jti}`: optionally when the token expires anyway. */
export const RevocationBody = z.strictObject({ expiresAt: z.iso.datetime({ offset: true }).optional() });

/** A user of the directory (docs/api.md "Users"). */
export const UserView = z.object({
  connectId: ConnectId,
  href: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
});

/**
 * The caller as the gateway sees it (`GET /id/me`, docs/api.md "Who is calling"): what kind of
 * principal, who (a client's id, a user's connectId, a staff member's `sub` at their provider),
 * through which client and provider, and what it may do. The console shows and hides its
 * controls by it, so that the gateway's mapping of a provider's claims exists once.
 */
export const Me = z.object({
  kind: z.enum(['client', 'user', 'staff']),
  id: z.string(),
  clientId: z.string().nullable(),
  grantorId: z.string().nullable(),
  admin: z.boolean(),
  /** The identity provider whose token established it; null for Basic credentials. */
  issuer: z.string().nullable(),
  name: z.string().nullable(),
  /** A staff member's level and grantors (none for an admin); null for anyone else. */
  staff: z.object({ level: z.enum(['read', 'write', 'admin']), grantors: z.array(z.string()) }).nullable(),
  /** What a token may do (its scopes); empty for Basic credentials and staff, whom scopes do not limit. */
  scopes: z.array(z.string()),
});
export type Me = z.infer<typeof Me>;

/** A page of the directory, in connectId order (admins). */
export const UserList = z.object({ users: z.array(UserView) });
