import { actsFor, changesFor, type Principal } from '@rs/contracts';
import type { SubscriptionEntity } from './subscription';

/**
 * docs/api.md "Principals and authorization", for subscriptions. Pure.
 * A non-admin client with grantor G sees, and may change, the subscriptions with grantorId G.
 */
export function canSee(principal: Principal, subscription: Pick<SubscriptionEntity, 'grantorId'>): boolean {
  return principal.admin || actsFor(principal, subscription.grantorId);
}

/**
 * Delete, activate, suspend, change (docs/api.md "Principals and authorization"): the
 * subscription's grantor, its `write` staff or an admin. Another grantor's subscription is
 * refused (401) whether or not the caller could read it.
 */
export function canManage(principal: Principal, subscription: Pick<SubscriptionEntity, 'grantorId'>): boolean {
  return principal.scheme === 'staff' ? changesFor(principal, subscription.grantorId) : canSee(principal, subscription);
}

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
  return principal.admin || (principal.scheme !== 'bearer' && actsFor(principal, subscription.grantorId));
}

/** Create: for the caller's own grantor unless admin (docs/api.md). */
export function canSubscribeFor(principal: Principal, grantorId: string): boolean {
  return principal.scheme === 'staff'
    ? changesFor(principal, grantorId)
    : principal.admin || principal.grantorId === grantorId;
}

/**
 * The grantor a list is restricted to, or null for an admin (who sees every grantor's); a
 * staff member's, the grantor its list asks for when it is one of theirs.
 */
export function visibleGrantorOf(principal: Principal, asked?: string): string | null {
  if (principal.admin) return null;
  if (principal.scheme === 'staff') return asked && actsFor(principal, asked) ? asked : '';
  return principal.grantorId ?? '';
}
