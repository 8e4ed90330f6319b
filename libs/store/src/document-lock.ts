/**
 * Serializes writes to one document within this process.
 *
 * MongoDB applies each single-document update atomically, so a compare-and-set on
 * `generation` and the relay's clean-up never interleave. FerretDB 1.x (the local test
 * server) does not: it reads, changes and writes back whole documents, so two concurrent
 * updates of one document can both pass their filter, and one can restore an outbox entry
 * the other just removed. Every write of a document with an outbox goes through this lock;
 * on MongoDB it only saves retries. See docs/decisions/0008-per-document-write-lock.md.
 */
export class DocumentLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(collection: string, id: unknown, write: () => Promise<T>): Promise<T> {
    return this.runMany(collection, [id], write);
  }

  /** Runs `write` once every earlier write to any of `ids` has finished (a batch of updates). */
  async runMany<T>(collection: string, ids: readonly unknown[], write: () => Promise<T>): Promise<T> {
    const keys = [...new Set(ids.map((id) => `${collection}\u0000${String(id)}`))];
    const previous = keys.map((key) => this.tails.get(key)).filter((tail) => tail !== undefined);
    const current = (previous.length === 0 ? Promise.resolve() : Promise.all(previous)).then(write, write);
    const tail = current.catch(() => undefined);
    for (const key of keys) this.tails.set(key, tail);
    try {
      return await current;
    } finally {
      for (const key of keys) if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

/** The process-wide lock table shared by the stores and the outbox relays. */
export const documentLock = new DocumentLock();
