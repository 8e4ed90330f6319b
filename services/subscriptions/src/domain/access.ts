import type { Principal } from '@rs/contracts';
import type { SubscriptionEntity } from './subscription';

/**
 * docs/api.md "Principals and authorization", for subscriptions. Pure.
 * A non-admin client with grantor G sees, and may change, the subscriptions with grantorId G.
 */
export function canSee(principal: Principal, subscription: Pick<SubscriptionEntity, 'grantorId'>): boolean {
  return principal.admin || subscription.grantorId === principal.grantorId;
}

/**
 * Delete, activate, suspend (docs/api.md "Principals and authorization"): the subscription's grantor or an admin. Another
 * grantor's subscription is refused (401) whether or not the caller could read it.
 */
export const canManage = canSee;

/**
 * History (docs/api.md): whoever may read the subscription; once it is deleted, its grantor
 * (with its Basic credentials) and admins.
 */
export function canReadHistory(
  principal: Principal,
  subscription: Pick<SubscriptionEntity, 'grantorId'>,
  deleted: boolean,
): boolean {
  if (!deleted) return canSee(principal, subscription);
  return principal.admin || (principal.scheme === 'basic' && subscription.grantorId === principal.grantorId);
}

/** Create: for the caller's own grantor unless admin (docs/api.md). */
export function canSubscribeFor(principal: Principal, grantorId: string): boolean {
  return principal.admin || principal.grantorId === grantorId;
}

/** The grantor a list is restricted to, or null for an admin (who sees every grantor's). */
export function visibleGrantorOf(principal: Principal): string | null {
  return principal.admin ? null : (principal.grantorId ?? '');
}
