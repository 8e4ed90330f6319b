/** `items` in runs of at most `size`, in order. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/**
 * Items in batches of at most `maxItems` whose `weightOf` adds up to at most `maxWeight` (one
 * heavier than that goes alone), in order: for messages bounded by their size as well as by
 * their count.
 */
export function weighedChunks<T>(
  items: readonly T[],
  limits: { maxItems: number; maxWeight: number; weightOf: (item: T) => number },
): T[][] {
  const batches: T[][] = [];
  let weight = 0;
  for (const item of items) {
    const itemWeight = limits.weightOf(item);
    const current = batches.at(-1);
    if (!current || current.length === limits.maxItems || weight + itemWeight > limits.maxWeight) {
      batches.push([item]);
      weight = itemWeight;
    } else {
      current.push(item);
      weight += itemWeight;
    }
  }
  return batches;
}
