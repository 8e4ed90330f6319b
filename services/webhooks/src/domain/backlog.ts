/**
 * What waits in a dispatcher's memory for its attempt, and whether one more delivery may
 * (docs/decisions/0082). While the memory has room, anything may wait: a burst for one endpoint
 * waits in memory, not in the database. Once it is full, its bound is shared fairly: each grantor
 * waiting gets an equal share, divided equally among its endpoints waiting, and a delivery gets
 * in while its endpoint is below that share. So no grantor's endpoints, however slow or many,
 * leave another grantor's deliveries (or the same grantor's other endpoints) waiting, and the
 * memory stays below twice the bound. Pure.
 */
export class Backlog {
  private readonly ofEndpoint = new Map<string, number>();
  /** Per grantor: its endpoints with deliveries waiting, and how many in all. */
  private readonly ofGrantor = new Map<string, { endpoints: Set<string>; waiting: number }>();
  private total = 0;

  /** `limit`: the deliveries that may wait in all before the memory is shared. */
  constructor(private readonly limit: number) {}

  /** Whether one more delivery for `endpointId`, of `grantor`, may wait in memory. */
  admits(endpointId: string, grantor: string): boolean {
    if (this.total < this.limit) return true;
    const waiting = this.ofEndpoint.get(endpointId) ?? 0;
    const own = this.ofGrantor.get(grantor);
    const grantors = this.ofGrantor.size + (own ? 0 : 1);
    const endpoints = (own?.endpoints.size ?? 0) + (waiting === 0 ? 1 : 0);
    return waiting < this.limit / grantors / endpoints;
  }

  add(endpointId: string, grantor: string): void {
    this.ofEndpoint.set(endpointId, (this.ofEndpoint.get(endpointId) ?? 0) + 1);
    let own = this.ofGrantor.get(grantor);
    if (!own) this.ofGrantor.set(grantor, (own = { endpoints: new Set(), waiting: 0 }));
    own.endpoints.add(endpointId);
    own.waiting += 1;
    this.total += 1;
  }

  remove(endpointId: string, grantor: string): void {
    const left = (this.ofEndpoint.get(endpointId) ?? 0) - 1;
    if (left > 0) this.ofEndpoint.set(endpointId, left);
    else this.ofEndpoint.delete(endpointId);
    const own = this.ofGrantor.get(grantor);
    if (own) {
      own.waiting -= 1;
      if (left <= 0) own.endpoints.delete(endpointId);
      if (own.waiting <= 0) this.ofGrantor.delete(grantor);
    }
    this.total -= 1;
  }

  /** Deliveries waiting for `endpointId`. */
  waitingFor(endpointId: string): number {
    return this.ofEndpoint.get(endpointId) ?? 0;
  }
}

/** The least and the most a delivery is put off for (it waits in the database meanwhile). */
export const PUT_OFF_MS = { least: 5_000, most: 300_000 };

/**
 * How long a delivery that found no room waits before it is looked at again: about as long as
 * its endpoint needs to work through what waits for it (`waiting` deliveries, `concurrency` at
 * a time, each taking `attemptMs`), within `PUT_OFF_MS`. An endpoint that answers at once is
 * looked at again in seconds; one that hangs, in minutes, so that its deliveries are not read
 * and written again every few seconds while nothing moves.
 */
export function putOffFor(waiting: number, concurrency: number, attemptMs: number | null): number {
  if (attemptMs === null) return PUT_OFF_MS.least;
  const drainMs = (waiting / Math.max(1, concurrency)) * attemptMs;
  return Math.round(Math.min(PUT_OFF_MS.most, Math.max(PUT_OFF_MS.least, drainMs)));
}
