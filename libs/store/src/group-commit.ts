/**
 * Group commit: what callers hand in while a write is under way is written together by the
 * next one (at most `maxBatch` at a time), so that concurrent callers share writes and a lone
 * caller waits for one write only. Each caller gets its own item's outcome; a write that fails
 * fails every item of its batch.
 */
export class GroupCommit<Item, Outcome> {
  private waiting: Array<{ item: Item; resolve: (outcome: Outcome) => void; reject: (error: unknown) => void }> = [];
  private writing = false;

  constructor(
    private readonly write: (items: Item[]) => Promise<Outcome[]>,
    private readonly maxBatch: number,
  ) {}

  add(item: Item): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxBatch);
      try {
        const outcomes = await this.write(batch.map(({ item }) => item));
        batch.forEach(({ resolve }, index) => resolve(outcomes[index]!));
      } catch (error) {
        for (const { reject } of batch) reject(error);
      }
    }
    this.writing = false;
  }
}
