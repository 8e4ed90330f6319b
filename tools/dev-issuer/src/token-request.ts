import { ClientId, ConnectId, SCOPES, type Scope } from '@rs/contracts';
import { z } from 'zod';

const Scopes = z
  .string()
  .transform((text) => text.split(/[\s,]+/).filter((scope) => scope !== ''))
  .pipe(
    z
      .array(z.enum(SCOPES, { message: `each scope must be one of ${SCOPES.join(', ')}` }))
      .min(1, 'at least one scope is needed'),
  );

/**
 * What the development issuer is asked for: a token for `user` (its `sub`), used
 * by the API client `client` (its `client_id`, which must be registered in the gateway),
 * with the scopes of docs/api.md, space- or comma-separated, for `expires_in` seconds.
 */
export const TokenRequest = z
  .object({
    user: ConnectId,
    client: ClientId,
    scope: Scopes,
    expires_in: z.coerce.number().int().min(60).max(86_400).default(3_600),
  })
  .transform(({ expires_in, ...rest }) => ({ ...rest, expiresIn: expires_in }));
export type TokenRequest = { user: string; client: string; scope: Scope[]; expiresIn: number };

export type ParsedTokenRequest = { ok: true; value: TokenRequest } | { ok: false; reason: string };

export function parseTokenRequest(fields: unknown): ParsedTokenRequest {
  const parsed = TokenRequest.safeParse(fields);
  if (parsed.success) return { ok: true, value: parsed.data };
  const reason = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');
  return { ok: false, reason };
}
