import type { Me, Principal } from '@rs/contracts';

/**
 * `GET /id/me` (docs/api.md "Who is calling"): the caller as the gateway established it, in the
 * words of the API. The one reading of a provider's claims is the gateway's (domain/claims.ts);
 * the console asks this instead of decoding a token itself. Pure.
 */
export function meOf(principal: Principal): Me {
  if (principal.scheme === 'staff' && principal.person) {
    const level = principal.admin ? 'admin' : principal.staff?.write ? 'write' : 'read';
    return {
      kind: 'staff',
      id: principal.person.subject,
      clientId: null,
      grantorId: null,
      admin: principal.admin,
      issuer: principal.person.issuer,
      name: principal.person.name,
      staff: { level, grantors: principal.staff?.grantors ?? [] },
      scopes: [],
    };
  }
  const user = principal.scheme === 'bearer';
  return {
    kind: user ? 'user' : 'client',
    id: user ? (principal.subject ?? '') : principal.clientId,
    clientId: principal.clientId,
    grantorId: principal.grantorId,
    admin: principal.admin,
    issuer: principal.issuer ?? null,
    name: null,
    staff: null,
    scopes: user ? principal.scopes : (principal.limitedTo ?? []),
  };
}
