import { readFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { env } from '@rs/config';
import { SCOPES } from '@rs/contracts';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/**
 * The identity providers the gateway trusts (docs/identity-providers.md): `AUTH_ISSUERS` (a JSON
 * array) or `AUTH_ISSUERS_FILE` (the same array in JSON or YAML); `JWT_ISSUER` with
 * `JWT_AUDIENCE` and `JWT_JWKS_URL` or `JWT_PUBLIC_KEY` is a shorthand for one entry.
 */
const ClaimNames = z.strictObject({
  /** The API client a token was issued to: the first of these claims present. */
  client: z.array(z.string().min(1)).min(1).default(['client_id', 'azp', 'cid']),
  /** The user it acts for: a dotted path into the claims. */
  user: z.string().min(1).default('sub'),
  /** Where its scopes are: `scope` (space separated) or `scp` (a string or a list). */
  scopes: z.array(z.string().min(1)).min(1).default(['scope', 'scp']),
  /** Its roles or permissions (a dotted path to a string or a list), mapped to scopes and staff roles. */
  roles: z.string().min(1).optional(),
  /**
   * How the provider marks a client's own token when `sub` is not the client (Keycloak's service
   * accounts: `preferred_username` is `service-account-<client>`, `sub` a UUID).
   */
  serviceAccount: z.strictObject({ claim: z.string().min(1), prefix: z.string().min(1) }).optional(),
});

/** "Issuers stay in their lane": the grantors whose staff this provider signs for; `["*"]` for the platform's own. */
const StaffGrantors = z
  .array(z.string().min(1))
  .min(1, 'names no grantor: list the grantors its staff serve, or ["*"] for the platform\'s own operators')
  .refine((grantors) => !grantors.includes('*') || grantors.length === 1, {
    message: 'is ["*"] or a list of grantors',
  });

const StaffRoles = z
  .strictObject({
    read: z.string().min(1).optional(),
    write: z.string().min(1).optional(),
    admin: z.string().min(1).optional(),
    /** The claim (a dotted path) naming the staff member's grantors, a string or a list. */
    grantor: z.string().min(1).default('grantor'),
    /** The grantors this provider's staff may serve (required): a claim naming another is refused. */
    grantors: StaffGrantors,
  })
  .refine((staff) => staff.read || staff.write || staff.admin, { message: 'names no role (read, write or admin)' });

const Pem = z.string().refine(
  (pem) => {
    try {
      return createPublicKey(pem).type === 'public';
    } catch {
      return false;
    }
  },
  { message: 'must be a PEM public key' },
);

export const IssuerEntry = z
  .strictObject({
    issuer: z.string().min(1),
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    jwksUri: env.httpUrl.optional(),
    publicKey: Pem.optional(),
    claims: ClaimNames.prefault({}),
    scopeMap: z.record(z.string().min(1), z.array(z.enum(SCOPES))).default({}),
    /**
     * The API clients its tokens may name: a list of ids, or `"*"` for any client that is not an
     * admin (an admin client only when listed by id). None when absent: such a provider signs
     * for staff, or for nothing at all.
     */
    clients: z.union([z.literal('*'), z.array(z.string().min(1))]).default([]),
    staff: StaffRoles.optional(),
  })
  .refine((entry) => !(entry.jwksUri && entry.publicKey), { message: 'give jwksUri or publicKey, not both' });
export type IssuerEntry = z.infer<typeof IssuerEntry>;

const IssuerList = z
  .array(IssuerEntry)
  .min(1)
  .superRefine((entries, ctx) => {
    const seen = new Set<string>();
    entries.forEach((entry, index) => {
      if (seen.has(entry.issuer)) ctx.addIssue({ code: 'custom', path: [index, 'issuer'], message: 'is listed twice' });
      seen.add(entry.issuer);
    });
  });

/** A wrong issuer list: the variable it came from, and what is wrong in it. */
export class IssuerConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(detail);
  }
}

export interface IssuerSettings {
  AUTH_ISSUERS?: string | undefined;
  AUTH_ISSUERS_FILE?: string | undefined;
  JWT_ISSUER?: string | undefined;
  JWT_AUDIENCE?: string | undefined;
  JWT_JWKS_URL?: string | undefined;
  JWT_PUBLIC_KEY?: string | undefined;
}

/**
 * The trusted issuers from the environment; none when Bearer is off. A wrong entry stops the
 * gateway at start with a message naming the variable, the entry and the field.
 */
export function issuersFrom(settings: IssuerSettings): IssuerEntry[] {
  const sources = [settings.AUTH_ISSUERS, settings.AUTH_ISSUERS_FILE, settings.JWT_ISSUER].filter(Boolean);
  if (sources.length > 1)
    throw new IssuerConfigError(
      'AUTH_ISSUERS',
      'set one of AUTH_ISSUERS, AUTH_ISSUERS_FILE or JWT_ISSUER, not several',
    );
  if (settings.AUTH_ISSUERS) return parseList('AUTH_ISSUERS', () => JSON.parse(settings.AUTH_ISSUERS!));
  if (settings.AUTH_ISSUERS_FILE) {
    const file = settings.AUTH_ISSUERS_FILE;
    return parseList('AUTH_ISSUERS_FILE', () => parseYaml(readFileSync(file, 'utf8')));
  }
  if (!settings.JWT_ISSUER) return [];
  const shorthand = {
    issuer: settings.JWT_ISSUER,
    audience: settings.JWT_AUDIENCE,
    // One issuer for the whole platform: it may name any client but an admin.
    clients: '*',
    ...(settings.JWT_JWKS_URL ? { jwksUri: settings.JWT_JWKS_URL } : {}),
    ...(settings.JWT_PUBLIC_KEY ? { publicKey: settings.JWT_PUBLIC_KEY } : {}),
  };
  return parseList('JWT_ISSUER', () => [shorthand]);
}

function parseList(variable: string, read: () => unknown): IssuerEntry[] {
  let raw: unknown;
  try {
    raw = read();
  } catch (error) {
    throw new IssuerConfigError(variable, `cannot be read: ${(error as Error).message}`);
  }
  const parsed = IssuerList.safeParse(raw);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const [index, ...field] = issue.path;
    const entry = typeof index === 'number' ? `entry ${index}${issuerName(raw, index)}` : 'the list';
    return `${entry}${field.length ? ` field ${field.join('.')}` : ''} ${issue.message}`;
  });
  throw new IssuerConfigError(variable, problems.join('; '));
}

function issuerName(raw: unknown, index: number): string {
  const issuer = Array.isArray(raw) ? (raw[index] as { issuer?: unknown } | undefined)?.issuer : undefined;
  return typeof issuer === 'string' ? ` (${issuer})` : '';
}
