/**
 * Group commit: what callers hand in while a write is under way is written together by the
 * next one (at most `maxBatch` at a time), so that concurrent callers share writes and a lone
 * caller waits for one write only. Each caller gets its own item's outcome; a write that fails
 * fails every item of its batch.
 *
 * With `lingerMs`, a batch that is not full waits that long for more before it is written: for
 * writes no caller is waiting on to answer (what is recorded after an answer), fewer and larger
 * writes at the cost of their own latency. `flush` writes what is waiting without lingering.
 */
export class GroupCommit<Item, Outcome> {
  private waiting: Array<{ item: Item; resolve: (outcome: Outcome) => void; reject: (error: unknown) => void }> = [];
  private writing = false;
  /** Ends the current linger early (a full batch, a flush). */
  private endLinger: (() => void) | undefined;
  private flushing = 0;
  private readonly idle: Array<() => void> = [];

  constructor(
    private readonly write: (items: Item[]) => Promise<Outcome[]>,
    private readonly maxBatch: number,
    private readonly lingerMs = 0,
  ) {}

  add(item: Item): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (!this.writing) void this.drain();
      else if (this.waiting.length >= this.maxBatch) this.endLinger?.();
    });
  }

  /** Resolves once everything handed in before is written (or failed). */
  async flush(): Promise<void> {
    if (!this.writing) return;
    this.flushing += 1;
    this.endLinger?.();
    await new Promise<void>((resolve) => this.idle.push(resolve));
    this.flushing -= 1;
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.waiting.length > 0) {
      if (this.lingerMs > 0 && this.waiting.length < this.maxBatch && this.flushing === 0) await this.linger();
      const batch = this.waiting.splice(0, this.maxBatch);
      try {
        const outcomes = await this.write(batch.map(({ item }) => item));
        batch.forEach(({ resolve }, index) => resolve(outcomes[index]!));
      } catch (error) {
        for (const { reject } of batch) reject(error);
      }
    }
    this.writing = false;
    for (const resolve of this.idle.splice(0)) resolve();
  }

  private linger(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.endLinger?.(), this.lingerMs);
      this.endLinger = () => {
        clearTimeout(timer);
        this.endLinger = undefined;
        resolve();
      };
    });
  }
}
