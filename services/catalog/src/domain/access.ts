import type { Principal } from '@rs/contracts';

/**
 * docs/api.md: the catalog is administered by admin clients. Pure.
 * Reads: an admin client, or another service of the platform (the SKU checks of rights and
 * subscriptions). Writes: an admin client only.
 */
export function canReadCatalog(principal: Principal): boolean {
  return principal.admin || principal.scheme === 'service';
}

export function canWriteCatalog(principal: Principal): boolean {
  return principal.admin && principal.scheme !== 'service';
}
