import { hash } from 'node:crypto';

/**
 * Buckets of a collection: reading all of it (the scheduler's rebuild) goes a bucket at a
 * time by equality on `bucket`, which FerretDB answers from an index, where paging by a
 * range of ids and a sort made it read (and hold in memory) the whole collection for every
 * page (docs/decisions/0011).
 */
export const BUCKETS = 64;

/** FNV-1a (32 bits) of an id: stable and evenly spread, for buckets and partitions. */
export function hashOf(id: string): number {
  let value = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    value ^= id.charCodeAt(i);
    value = Math.imul(value, 0x01000193);
  }
  return value >>> 0;
}

export const bucketOf = (id: string): number => hashOf(id) % BUCKETS;

/**
 * docs/api.md "Identifiers": the id of the right a subscription's template yields for a period,
 * the same whichever offset the period start is written with, so a repeated `rights.issue`
 * creates nothing twice. `plan` counts the plan changes the subscription has had (docs/api.md
 * "Plan changes"): the rights a change issues for the rest of a period differ from those the
 * period began with; 0 keeps the ids of rights issued before plans could change. 32 hex
 * characters (alphanumeric).
 */
export function periodRightId(subscriptionId: string, periodStart: string, templateIndex: number, plan = 0): string {
  const instant = new Date(periodStart).toISOString();
  const key = `${subscriptionId}|${instant}|${templateIndex}${plan === 0 ? '' : `|${plan}`}`;
  return hash('sha256', key, 'hex').slice(0, 32);
}
