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
