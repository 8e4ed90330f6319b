import { CONTROL_CHARACTER } from '@rs/contracts';

/**
 * What an access token's claims say, as its issuer's entry maps them
 * (docs/identity-providers.md): which API client it was issued to, which user it acts for and
 * with which scopes. Pure.
 */
export interface ClaimMapping {
  claims: {
    client: string[];
    user: string;
    scopes: string[];
    roles?: string | undefined;
    serviceAccount?: { claim: string; prefix: string } | undefined;
  };
  scopeMap: Record<string, string[]>;
  /** The roles that make a token a staff member's, and the claim naming its grantors. */
  staff?:
    { read?: string | undefined; write?: string | undefined; admin?: string | undefined; grantor: string } | undefined;
}

export type StaffRole = 'read' | 'write' | 'admin';

export interface MappedClaims {
  /** The registered API client (the first present of `claims.client`), or null. */
  clientId: string | null;
  /** The user (`claims.user`), or null when the claim is absent or not a string. */
  subject: string | null;
  /** From `scope`/`scp` (a space-separated string or a list), and from the roles through `scopeMap`. */
  scopes: string[];
  /** A staff member's highest role and grantors (docs/identity-providers.md "Staff"), or null. */
  staff: { role: StaffRole; grantors: string[] } | null;
  /** The person's `name`, else `email`, when the token carries one (control characters escaped). */
  name: string | null;
  /**
   * Issued to its client for itself (the client-credentials grant): `sub` is the client, or
   * Auth0's `<client>@clients`, or `gty` says so, or the entry's `claims.serviceAccount` names
   * the client (Keycloak's `preferred_username` `service-account-<client>`).
   */
  clientCredentials: boolean;
}

/** The value at a dotted path (`realm_access.roles`); a claim whose own name holds dots is found too. */
export function claimAt(payload: Record<string, unknown>, path: string): unknown {
  if (path in payload) return payload[path];
  let value: unknown = payload;
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A claim read as a list of strings: a space-separated string or a list (other values skipped). */
export function listAt(payload: Record<string, unknown>, path: string): string[] {
  const value = claimAt(payload, path);
  if (typeof value === 'string') return value.split(' ').filter(Boolean);
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string' && item !== '');
  return [];
}

export function mapClaims(payload: Record<string, unknown>, mapping: ClaimMapping): MappedClaims {
  const { claims, scopeMap } = mapping;
  const client = claims.client
    .map((name) => claimAt(payload, name))
    .find((value) => typeof value === 'string' && value);
  const subject = claimAt(payload, claims.user);
  const scopes = new Set(claims.scopes.flatMap((name) => listAt(payload, name)));
  const roles = claims.roles ? listAt(payload, claims.roles) : [];
  for (const role of roles) for (const scope of scopeMap[role] ?? []) scopes.add(scope);
  const name = [payload.name, payload.email].find((value) => typeof value === 'string' && value !== '');
  return {
    clientId: (client as string | undefined) ?? null,
    subject: typeof subject === 'string' && subject !== '' ? subject : null,
    scopes: [...scopes],
    staff: staffOf(payload, roles, mapping.staff),
    name: typeof name === 'string' ? escapeControls(name) : null,
    clientCredentials:
      payload.gty === 'client-credentials' ||
      (typeof client === 'string' &&
        (payload.sub === client ||
          payload.sub === `${client}@clients` ||
          isServiceAccountOf(payload, client, claims.serviceAccount))),
  };
}

/**
 * Keycloak's service accounts: the token of client `acme`'s service account names the user
 * `service-account-acme` (Keycloak keeps user names in lower case), its `sub` a UUID.
 */
function isServiceAccountOf(
  payload: Record<string, unknown>,
  client: string,
  rule: ClaimMapping['claims']['serviceAccount'],
): boolean {
  if (!rule) return false;
  const named = claimAt(payload, rule.claim);
  return typeof named === 'string' && named.toLowerCase() === `${rule.prefix}${client}`.toLowerCase();
}

/** Every control character of a text (a stored name never holds one as it is). */
const CONTROLS = new RegExp(CONTROL_CHARACTER.source, 'g');

/** A name as the log keeps it: each control character written as its `\uXXXX` escape. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Whether the text holds a control character (a `sub` or `grantor` with one is refused). */
export function hasControls(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/** The highest staff role the roles hold (admin, then write, then read), and the grantors claimed. */
function staffOf(
  payload: Record<string, unknown>,
  roles: readonly string[],
  staff: ClaimMapping['staff'],
): MappedClaims['staff'] {
  if (!staff) return null;
  const role = (['admin', 'write', 'read'] as const).find(
    (one) => staff[one] !== undefined && roles.includes(staff[one]),
  );
  return role ? { role, grantors: listAt(payload, staff.grantor) } : null;
}
