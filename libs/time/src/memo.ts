/**
 * A pure function remembered for its last `limit` distinct arguments (oldest forgotten
 * first). Renewal parses the same few time specs and intervals thousands of times a second
 * (a grantor's monthly base shares one start and one period), and luxon's parsing and
 * calendar arithmetic were a large share of the services' busy time (docs/performance.md). The bound keeps a flood of distinct inputs from growing memory; what is remembered
 * must be immutable, as luxon's values are.
 */
export function memoized<K, V>(limit: number, compute: (key: K) => V): (key: K) => V {
  const remembered = new Map<K, V>();
  return (key) => {
    if (remembered.has(key)) return remembered.get(key)!;
    const value = compute(key);
    if (remembered.size >= limit) remembered.delete(remembered.keys().next().value!);
    remembered.set(key, value);
    return value;
  };
}
