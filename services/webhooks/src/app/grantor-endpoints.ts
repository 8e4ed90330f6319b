import type { Endpoint, EndpointStore } from '../store/endpoint-store';

/**
 * The endpoints each event of a batch may go to (docs/api.md): those of the grantors
 * named in its resource (the grantor, the service provider) and the admins', each grantor's
 * read once per batch through the index by grantor, never every endpoint of every grantor.
 * Read afresh for every batch, so an endpoint receives the events that follow its creation.
 */
export class GrantorEndpoints {
  constructor(private readonly store: EndpointStore) {}

  /** Candidates for each event, by its data (its patterns and `mayReceive` still decide). */
  async forEvents(datas: readonly unknown[]): Promise<Endpoint[][]> {
    const grantorsOf = datas.map((data) => {
      const resource = (data ?? {}) as { grantorId?: unknown; serviceProviderId?: unknown };
      const grantors = new Set<string | null>([null]);
      for (const party of [resource.grantorId, resource.serviceProviderId])
        if (typeof party === 'string') grantors.add(party);
      return [...grantors];
    });
    const distinct = [...new Set(grantorsOf.flat())];
    const read = await Promise.all(distinct.map((grantor) => this.store.ofGrantor(grantor)));
    const byGrantor = new Map(distinct.map((grantor, i) => [grantor, read[i]!]));
    return grantorsOf.map((grantors) => grantors.flatMap((grantor) => byGrantor.get(grantor)!));
  }
}
