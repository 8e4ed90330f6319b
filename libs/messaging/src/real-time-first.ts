import { laneWaits } from './metrics';

/** How long after its last real-time work a process still counts as busy with real time. */
export const REAL_TIME_QUIET_MS = 2_000;

/**
 * Real time first (docs/decisions/0061). The work of test clocks (the clock lanes of decision
 * 0054, the scheduler's steps of its clocks) takes whatever the process has while real time is
 * quiet, and one unit at a time for the whole process while real-time work is in hand or was
 * within the last `quietMs`. A rehearsal then competes with real time for one batch's worth of
 * the process and of the database's writes, and is never starved: a share bounded under load,
 * and the whole machine when nothing else wants it.
 *
 * The quiet period spans a pipeline: a renewal crosses the scheduler, the subscriptions and the
 * rights services in about a second, so each of them keeps yielding while real work may still
 * be coming its way or running in the next process.
 */
export class RealTimeFirst {
  private realInHand = 0;
  private lastRealAt = Number.NEGATIVE_INFINITY;
  private laneInHand = 0;
  private waiting: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly quietMs = REAL_TIME_QUIET_MS,
    private readonly now = () => performance.now(),
  ) {}

  /** Runs real-time work: the clock lanes yield while it is in hand and for the quiet period after. */
  real<T>(work: () => Promise<T>): Promise<T> {
    this.realInHand++;
    return work().finally(() => {
      this.realInHand--;
      this.saw();
    });
  }

  /** Real-time work happened that did not run through `real` (a sweep that commanded). */
  saw(): void {
    this.lastRealAt = this.now();
    this.wake();
  }

  /** Runs a unit of simulated work when its turn comes. */
  async simulated<T>(work: () => Promise<T>): Promise<T> {
    if (!this.mayStart()) {
      laneWaits.inc();
      do await this.turn();
      while (!this.mayStart());
    }
    this.laneInHand++;
    return work().finally(() => {
      this.laneInHand--;
      this.wake();
    });
  }

  /** Whether real time has work in hand or had some within the quiet period. */
  get yielding(): boolean {
    return this.realInHand > 0 || this.now() - this.lastRealAt < this.quietMs;
  }

  private mayStart(): boolean {
    return this.laneInHand === 0 || !this.yielding;
  }

  /** Resolves when a unit of simulated work ends, real-time work ends, or the quiet period has passed. */
  private turn(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (this.realInHand === 0 && this.timer === undefined) {
        const left = Math.max(1, this.lastRealAt + this.quietMs - this.now());
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.wake();
        }, left);
        this.timer.unref();
      }
    });
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }
}
