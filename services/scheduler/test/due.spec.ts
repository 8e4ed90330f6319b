import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '@rs/hashing';
import {
  bucketsOf,
  CLOCK_SKEW_MS,
  dueKeyOf,
  landedLate,
  ownedPartitions,
  READ_AHEAD_S,
  PARTITIONS,
  partitionOf,
  secondOf,
  SOON_MARGIN_MS,
  slotKey,
  SOON_KEY,
} from '../src/domain/due';

const NOW = new Date('2026-12-01T00:00:00Z');

describe('due slots (docs/decisions/0011)', () => {
  it('when an item is due later than the margin, then it is kept under its partition and second', () => {
    const dueAt = new Date(NOW.getTime() + SOON_MARGIN_MS + 1_500);
    expect(dueKeyOf('sub-1', dueAt, NOW)).toBe(slotKey(partitionOf('sub-1'), secondOf(dueAt)));
  });

  it('when a recording lands within the read-ahead and the clock skew of the start of its second, or after, then it landed late', () => {
    const key = slotKey(3, secondOf(NOW));
    // Sweepers read a second READ_AHEAD_S before it begins (on a clock up to CLOCK_SKEW_MS ahead of the writer's).
    const readAt = NOW.getTime() - READ_AHEAD_S * 1000;
    expect(landedLate(key, new Date(readAt - CLOCK_SKEW_MS - 1))).toBe(false);
    expect(landedLate(key, new Date(readAt - CLOCK_SKEW_MS))).toBe(true);
    expect(landedLate(key, new Date(NOW.getTime() + 60_000))).toBe(true);
    expect(landedLate(SOON_KEY, new Date(NOW.getTime() + 60_000))).toBe(false);
  });

  it('when an item is already due or nearly, then it goes to the soon bucket', () => {
    for (const offset of [-86_400_000, 0, SOON_MARGIN_MS]) {
      expect(dueKeyOf('sub-1', new Date(NOW.getTime() + offset), NOW)).toBe(SOON_KEY);
    }
  });

  it('when a replica rebuilds its partitions, then it reads the buckets whose ids are all in them, 8 of the 64 a partition', () => {
    for (let i = 0; i < 2_000; i++) {
      const id = `01JD${i.toString(36).padStart(8, '0')}`;
      expect(bucketsOf([partitionOf(id)])).toContain(bucketOf(id));
    }
    expect(bucketsOf([3])).toHaveLength(64 / PARTITIONS);
    expect(bucketsOf([0, 1, 2, 3, 4, 5, 6, 7])).toHaveLength(64);
  });

  it('when ids are many, then every partition gets a fair share and an id always the same one', () => {
    const counts = new Array<number>(PARTITIONS).fill(0);
    for (let i = 0; i < 8_000; i++) counts[partitionOf(`01JD${i.toString(36).padStart(8, '0')}`)]! += 1;
    for (const count of counts) expect(count).toBeGreaterThan(800);
    expect(partitionOf('abc')).toBe(partitionOf('abc'));
  });
});

describe('partitions shared by scheduler replicas', () => {
  it('when any set of replicas is live, then each partition has exactly one owner among them', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.uuid(), { minLength: 1, maxLength: 12 }), (members) => {
        const owners = new Array<number>(PARTITIONS).fill(0);
        for (const member of members) for (const p of ownedPartitions(members, member)) owners[p]! += 1;
        expect(owners).toEqual(new Array<number>(PARTITIONS).fill(1));
      }),
    );
  });

  it('when a replica is not among the live ones, then it owns nothing', () => {
    expect(ownedPartitions(['a', 'b'], 'c')).toEqual([]);
  });

  it('when one of two replicas stops, then the other owns every partition', () => {
    expect(ownedPartitions(['a', 'b'], 'a')).toHaveLength(PARTITIONS / 2);
    expect(ownedPartitions(['a'], 'a')).toHaveLength(PARTITIONS);
  });
});
