import { createLogger } from '@rs/logging';
import { describe, expect, it } from 'vitest';
import { ExpiryWrites } from '../src/app/expiry-writes';
import type { ReadExpiry } from '../src/domain/right';

const expiry = (i: number): ReadExpiry => ({
  rightId: `R${i}`,
  generation: 2,
  state: 'EXPIRED',
  updatedAt: new Date('2026-03-01T00:00:00Z'),
});
const logger = createLogger('test', 'silent');

describe('expiries written behind their events (docs/decisions/0027)', () => {
  it('when expiries are queued, then each is written once, in batches of at most 50, by the time drain returns', async () => {
    const written: string[][] = [];
    const writes = new ExpiryWrites(async (batch) => {
      written.push(batch.map((one) => one.rightId));
    }, logger);
    writes.add(Array.from({ length: 120 }, (_, i) => expiry(i)));
    writes.add([expiry(120)]);
    await writes.drain();
    expect(written.map((batch) => batch.length)).toEqual([50, 50, 20, 1]);
    expect(new Set(written.flat()).size).toBe(121);
  });

  it('when a write fails, then the others are still written and drain returns', async () => {
    const written: string[] = [];
    let calls = 0;
    const writes = new ExpiryWrites(async (batch) => {
      calls += 1;
      if (calls === 1) throw new Error('database unavailable');
      written.push(...batch.map((one) => one.rightId));
    }, logger);
    writes.add(Array.from({ length: 60 }, (_, i) => expiry(i)));
    await writes.drain();
    expect(written).toHaveLength(10);
  });
});
