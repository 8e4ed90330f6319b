/**
 * Bounds the secret hashes (scrypt) computed at once, and shares them fairly between source
 * addresses (docs/api.md "No lock-out"): each address waits in its own lane and the lanes
 * take turns, so a flood from one address delays another's first verification by at most
 * one hash per lane ahead of it. Past `maxWaiting` a new attempt is not queued at all.
 */
export class HashLanes {
  private running = 0;
  private waiting = 0;
  /** Lanes in turn order: a lane served goes to the back. */
  private readonly lanes = new Map<string, Array<() => void>>();

  constructor(
    private readonly concurrency: number,
    private readonly maxWaiting: number,
  ) {}

  /** Runs `task` in `lane` when its turn comes; null when too many attempts wait already. */
  run<T>(lane: string, task: () => Promise<T>): Promise<T> | null {
    if (this.running < this.concurrency) return this.start(task);
    if (this.waiting >= this.maxWaiting) return null;
    this.waiting += 1;
    return new Promise<T>((resolve, reject) => {
      const queue = this.lanes.get(lane) ?? [];
      queue.push(() => void this.start(task).then(resolve, reject));
      this.lanes.set(lane, queue);
    });
  }

  private async start<T>(task: () => Promise<T>): Promise<T> {
    this.running += 1;
    try {
      return await task();
    } finally {
      this.running -= 1;
      this.next();
    }
  }

  private next(): void {
    const first = this.lanes.entries().next();
    if (first.done) return;
    const [lane, queue] = first.value;
    const job = queue.shift()!;
    this.waiting -= 1;
    this.lanes.delete(lane);
    if (queue.length > 0) this.lanes.set(lane, queue);
    job();
  }
}
