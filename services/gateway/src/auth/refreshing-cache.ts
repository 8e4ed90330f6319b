import { systemClock, type Clock } from '@rs/time';
import { LRUCache } from 'lru-cache';

export interface RefreshingCacheOptions<K, V> {
  /** Reads the current value from its source (the gateway's database). */
  load: (key: K) => Promise<V>;
  /** A value younger than this is served as it is. */
  freshMs: number;
  /**
   * Past `freshMs` and younger than `freshMs + staleMs`, the value is still served while one
   * load refreshes it in the background; older, callers wait for that load.
   */
  staleMs: number;
  /** Entries kept (least recently used go first): memory stays bounded. */
  max: number;
  clock?: Clock;
}

interface Entry<V> {
  value: V;
  loadedAt: number;
}

/**
 * A cache of what the gateway looks up on every request (clients, users), refreshed with a
 * single flight per key: however many requests need a key whose value is old, one
 * load runs; the others get the previous value or wait for that load. A change made through
 * another gateway replica is seen within `freshMs` plus one load.
 */
export class RefreshingCache<K extends NonNullable<unknown>, V> {
  private readonly cache: LRUCache<K, Entry<V>>;
  private readonly now: () => number;

  constructor(private readonly options: RefreshingCacheOptions<K, V>) {
    const clock = options.clock ?? systemClock;
    this.now = () => clock().getTime();
    this.cache = new LRUCache<K, Entry<V>>({
      max: options.max,
      ttl: options.freshMs + options.staleMs,
      perf: { now: this.now },
      fetchMethod: async (key) => ({ value: await options.load(key), loadedAt: this.now() }),
    });
  }

  async get(key: K): Promise<V> {
    const entry = this.cache.peek(key, { allowStale: false });
    if (entry && this.now() - entry.loadedAt < this.options.freshMs) return entry.value;
    // Stale but usable: served now, refreshed once in the background. Missing or too old:
    // every caller awaits the one load in flight.
    const loaded = await this.cache.fetch(key, { forceRefresh: true, allowStale: entry !== undefined });
    return loaded!.value;
  }

  /** Forgets a key changed through this replica, so the next request loads it. */
  delete(key: K): void {
    this.cache.delete(key);
  }
}
