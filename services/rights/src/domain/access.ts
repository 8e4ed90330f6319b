import { mayReadRight, type Principal } from '@rs/contracts';
import type { RightEntity } from './right';

/**
 * docs/api.md "Principals and authorization", for rights. Pure.
 * A non-admin client with grantor G sees rights with grantorId G or serviceProviderId G
 * (the rule the gateway's entitlement checks share).
 */
export const canSee = mayReadRight;

/** Remove, activate, suspend: the right's grantor or an admin (docs/api.md "Principals and authorization"). */
export function canManage(principal: Principal, right: Pick<RightEntity, 'grantorId'>): boolean {
  return principal.admin || (principal.scheme === 'basic' && right.grantorId === principal.grantorId);
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
  const isMaker =
    principal.clientId === madeBy.clientId &&
    (principal.scheme === 'bearer' ? principal.subject : null) === madeBy.subject;
  const isGrantor = principal.scheme === 'basic' && rights.every((right) => right.grantorId === principal.grantorId);
  return isMaker || isGrantor;
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

/** Create: for the caller's own grantor unless admin. */
export function canGrantFor(principal: Principal, grantorId: string): boolean {
  return principal.admin || principal.grantorId === grantorId;
}

/** The visibility filter of a list, as a store query understands it. */
export function visibilityOf(principal: Principal): { grantorOrProvider: string } | null {
  return principal.admin ? null : { grantorOrProvider: principal.grantorId ?? '' };
}
