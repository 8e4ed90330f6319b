import type { IncomingHttpHeaders } from 'node:http';
import { decodeProjectedRights, PROJECTED_RIGHT_HEADER, type ProjectedRight } from '@rs/contracts';

const decoded = new WeakMap<IncomingHttpHeaders, readonly ProjectedRight[]>();

/**
 * The rights a service's answer says its change made (its projection header), decoded once
 * per answer: the entitlements and an audited request's entry both read them, and decoding
 * validates each against the contract's schema.
 */
export function projectedRightsOf(headers: IncomingHttpHeaders): readonly ProjectedRight[] {
  let rights = decoded.get(headers);
  if (rights === undefined) {
    rights = decodeProjectedRights(headers[PROJECTED_RIGHT_HEADER] as string | undefined);
    decoded.set(headers, rights);
  }
  return rights;
}
