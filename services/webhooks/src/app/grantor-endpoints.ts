import type { Endpoint, EndpointStore } from '../store/endpoint-store';

/** How long a grantor's endpoints are used before they are read again: a new or deleted endpoint counts within it. */
const FRESH_MS = 1_000;
/** Grantors whose endpoints are kept at once. */
const MAX_GRANTORS = 10_000;

/**
 * The endpoints an event may go to (DESIGN.md 8 and 9): those of the grantors named in its
 * resource (the grantor, the service provider) and the admins', each grantor's read through
 * the index by grantor and kept a second, never every endpoint of every grantor.
 */
export class GrantorEndpoints {
  private readonly cache = new Map<string, { endpoints: Promise<Endpoint[]>; until: number }>();

  constructor(private readonly store: EndpointStore) {}

  /** Candidates for an event about `data` (its patterns and `mayReceive` still decide). */
  async mayReceive(data: unknown, now: Date): Promise<Endpoint[]> {
    const resource = (data ?? {}) as { grantorId?: unknown; serviceProviderId?: unknown };
    const grantors = new Set<string | null>([null]);
    for (const party of [resource.grantorId, resource.serviceProviderId])
      if (typeof party === 'string') grantors.add(party);
    return (await Promise.all([...grantors].map((grantor) => this.of(grantor, now)))).flat();
  }

  private of(grantorId: string | null, now: Date): Promise<Endpoint[]> {
    const key = grantorId ?? '';
    const cached = this.cache.get(key);
    if (cached && cached.until > now.getTime()) return cached.endpoints;
    const endpoints = this.store.ofGrantor(grantorId);
    // A failed read is not kept: the next event reads again.
    endpoints.catch(() => this.cache.delete(key));
    if (this.cache.size >= MAX_GRANTORS) this.cache.clear();
    this.cache.set(key, { endpoints, until: now.getTime() + FRESH_MS });
    return endpoints;
  }
}
