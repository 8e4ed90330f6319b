/**
 * Slows down guessing (DESIGN.md 4): after `freeFailures` failed attempts for one client
 * within `windowMs`, further attempts are refused (429) for a time that doubles with every
 * further failure, up to `maxBlockMs`. A success clears the record. Per gateway process.
 */
export class FailureThrottle {
  private readonly records = new Map<string, { failures: number[]; blockedUntil: number; excess: number }>();

  constructor(
    private readonly options = { freeFailures: 5, windowMs: 60_000, baseBlockMs: 1_000, maxBlockMs: 300_000 },
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds the client must wait, or 0 when it may try. */
  retryAfterSeconds(clientId: string): number {
    const record = this.records.get(clientId);
    if (!record) return 0;
    const wait = record.blockedUntil - this.now();
    return wait > 0 ? Math.ceil(wait / 1000) : 0;
  }

  recordFailure(clientId: string): void {
    const now = this.now();
    if (this.records.size > 100_000) this.records.clear(); // bounded memory under a flood of names
    const record = this.records.get(clientId) ?? { failures: [], blockedUntil: 0, excess: 0 };
    record.failures = record.failures.filter((at) => now - at < this.options.windowMs);
    record.failures.push(now);
    if (record.failures.length > this.options.freeFailures) {
      const block = Math.min(this.options.maxBlockMs, this.options.baseBlockMs * 2 ** record.excess);
      record.excess += 1;
      record.blockedUntil = now + block;
    }
    this.records.set(clientId, record);
  }

  recordSuccess(clientId: string): void {
    this.records.delete(clientId);
  }
}
