import { actsFor, changesFor, mayReadRight, type Principal } from '@rs/contracts';
import type { RightEntity } from './right';

/**
 * docs/api.md "Principals and authorization", for rights. Pure.
 * A non-admin client with grantor G sees rights with grantorId G or serviceProviderId G
 * (the rule the gateway's entitlement checks share).
 */
export const canSee = mayReadRight;

/**
 * Remove, activate, suspend: the right's grantor, its `write` staff or an admin (docs/api.md
 * "Principals and authorization", docs/identity-providers.md "Staff").
 */
export function canManage(principal: Principal, right: Pick<RightEntity, 'grantorId'>): boolean {
  return changesFor(principal, right.grantorId);
}

/**
 * Usage: the grantor, the service provider, or a Bearer token with id.user.right.use for the
 * user whose client's grantor may see the right. A token acts for its user within its client's
 * reach, never beyond it: a user's app of grantor B cannot spend grantor A's right of the same
 * user (docs/security.md).
 */
export function canUse(
  principal: Principal,
  right: Pick<RightEntity, 'grantorId' | 'serviceProviderId' | 'userId'>,
): boolean {
  if (!canSee(principal, right)) return false;
  // Staff record usage as a support action: the role to change, of the right's grantor or provider.
  if (principal.scheme === 'staff') return principal.admin || principal.staff?.write === true;
  if (principal.scheme === 'bearer')
    return principal.scopes.includes('id.user.right.use') && (principal.admin || principal.subject === right.userId);
  return true;
}

/**
 * Settling a reservation (docs/api.md "Reservations"): the principal that made it (the same API
 * client, for the same user when it acted with a Bearer token), the grantor of every right it
 * holds units of (Basic), or an admin; and only while it may still use those rights. Any other
 * caller who may use the rights (the provider, when a user's app reserved) may not.
 */
export function canSettle(
  principal: Principal,
  madeBy: { clientId: string; subject: string | null },
  rights: ReadonlyArray<Pick<RightEntity, 'grantorId' | 'serviceProviderId' | 'userId'>>,
): boolean {
  if (rights.length === 0 || !rights.every((right) => canUse(principal, right))) return false;
  if (principal.admin) return true;
  const maker = makerOf(principal);
  const isMaker = maker.clientId === madeBy.clientId && maker.subject === madeBy.subject;
  const isGrantor = principal.scheme !== 'bearer' && rights.every((right) => changesFor(principal, right.grantorId));
  return isMaker || isGrantor;
}

/**
 * Who makes a reservation, as it records it: the API client, and the user its Bearer token acts
 * for, or the staff member (issuer and `sub`) who made it through any client.
 */
export function makerOf(principal: Principal): { clientId: string; subject: string | null } {
  if (principal.person)
    return { clientId: principal.clientId, subject: `${principal.person.issuer} ${principal.person.subject}` };
  return { clientId: principal.clientId, subject: principal.scheme === 'bearer' ? principal.subject : null };
}

/**
 * History (docs/api.md): whoever may read the right; once it is removed, its grantor and admins.
 * (A Bearer token reaches this only for its own user with the read scope, checked by the gateway.)
 */
export function canReadHistory(
  principal: Principal,
  right: Pick<RightEntity, 'grantorId' | 'serviceProviderId'>,
  removed: boolean,
): boolean {
  return removed ? canManage(principal, right) : canSee(principal, right);
}

/** Create: for the caller's own grantor unless admin; staff with `write`, for one of theirs. */
export function canGrantFor(principal: Principal, grantorId: string): boolean {
  return principal.scheme === 'staff'
    ? changesFor(principal, grantorId)
    : principal.admin || principal.grantorId === grantorId;
}

/**
 * The visibility filter of a list, as a store query understands it: the caller's grantor (as
 * grantor or provider); a staff member's, the grantor its list asks for when it is one of theirs.
 */
export function visibilityOf(principal: Principal, asked?: string): { grantorOrProvider: string } | null {
  if (principal.admin) return null;
  if (principal.scheme === 'staff') return { grantorOrProvider: asked && actsFor(principal, asked) ? asked : '' };
  return { grantorOrProvider: principal.grantorId ?? '' };
}
