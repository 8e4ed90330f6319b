/**
 * Buckets of a collection: reading all of it (the scheduler's rebuild) goes a bucket at a
 * time by equality on `bucket`, which FerretDB answers from an index, where paging by a
 * range of ids and a sort made it read (and hold in memory) the whole collection for every
 * page (docs/decisions/0011).
 */
export const BUCKETS = 64;

/** FNV-1a (32 bits) of an id: stable and evenly spread, for buckets and partitions. */
export function hashOf(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export const bucketOf = (id: string): number => hashOf(id) % BUCKETS;
