import pLimit from 'p-limit';
import type { Logger } from '@rs/logging';
import { chunks } from '@rs/batching';
import { counter, gauge } from '@rs/telemetry/metrics';
import type { ReadExpiry } from '../domain/right';

/** Expiries queued at most: beyond, they are left to the scheduler's rebuild (about 100 bytes each). */
const MAX_PENDING = 100_000;
/** Updates in one batch (docs/architecture.md: at most 50 statements). */
const BATCH = 50;

const pendingGauge = gauge(
  'rights_expiry_writes_pending',
  'Expiries published and not yet written (docs/decisions/0027)',
);
const leftCounter = counter(
  'rights_expiry_writes_left_total',
  'Expiries not queued for writing (the queue was full) or whose write failed: the rebuild has them expired again',
);

/**
 * Writes, behind their events, the expiries that reads already show (docs/decisions/0027):
 * one batch at a time, so that a burst of expiries publishes its events at the pace of reads
 * and inserts and the updates follow. An expiry not written (the queue full, a failed write,
 * a crash) changes no answer, since reads derive it; the scheduler's rebuild lists the right
 * as stored, and expiring it again publishes its event again (same id) and writes it.
 */
export class ExpiryWrites {
  private readonly limit = pLimit(1);
  private pending = 0;

  constructor(
    private readonly write: (expired: readonly ReadExpiry[]) => Promise<unknown>,
    private readonly logger: Logger,
  ) {}

  add(expired: readonly ReadExpiry[]): void {
    const kept = expired.map(({ rightId, generation, state, updatedAt }) => ({
      rightId,
      generation,
      state,
      updatedAt,
    }));
    for (const batch of chunks(kept, BATCH)) {
      if (this.pending + batch.length > MAX_PENDING) {
        leftCounter.inc(batch.length);
        continue;
      }
      this.changePending(batch.length);
      void this.limit(() => this.write(batch))
        .catch((error: unknown) => {
          leftCounter.inc(batch.length);
          this.logger.warn({ err: error, rights: batch.length }, 'expiries not written: the rebuild has them again');
        })
        .finally(() => this.changePending(-batch.length));
    }
  }

  /** Waits until what is queued is written (a graceful stop). */
  async drain(): Promise<void> {
    await this.limit(() => undefined);
  }

  private changePending(by: number): void {
    this.pending += by;
    pendingGauge.set(this.pending);
  }
}
