import { describe, expect, it } from 'vitest';
import { FailureThrottle, PER_ADDRESS, PER_CLIENT_AND_ADDRESS } from '../src/auth/failure-throttle';
import { RefreshingCache } from '../src/auth/refreshing-cache';
import { manualClock, type ManualClock } from '@rs/time';

const START = '2026-01-01T00:00:00Z';

describe('RefreshingCache', () => {
  function counting(clock: ManualClock) {
    let loads = 0;
    let value = 'v1';
    let release: () => void = () => undefined;
    let gate: Promise<void> | null = null;
    const cache = new RefreshingCache<string, string>({
      load: async () => {
        loads += 1;
        if (gate) await gate;
        return value;
      },
      freshMs: 1_000,
      staleMs: 1_000,
      max: 100,
      clock,
    });
    return {
      cache,
      loads: () => loads,
      change: (next: string) => (value = next),
      hold: () => (gate = new Promise<void>((resolve) => (release = resolve))),
      release: () => {
        gate = null;
        release();
      },
    };
  }

  it('when many callers ask for a missing key at once, then one load serves them all', async () => {
    const subject = counting(manualClock(START));
    subject.hold();
    const all = Promise.all(Array.from({ length: 20 }, () => subject.cache.get('k')));
    subject.release();
    expect(await all).toEqual(Array(20).fill('v1'));
    expect(subject.loads()).toBe(1);
  });

  it('when the value is stale, then callers get it at once while one load refreshes it; the next get sees the new value', async () => {
    const clock = manualClock(START);
    const subject = counting(clock);
    await subject.cache.get('k');
    subject.change('v2');
    clock.advance(1_500);
    subject.hold();
    const served = await Promise.all(Array.from({ length: 10 }, () => subject.cache.get('k')));
    expect(served).toEqual(Array(10).fill('v1'));
    subject.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await subject.cache.get('k')).toBe('v2');
    expect(subject.loads()).toBe(2);
  });

  it('when the value is older than fresh plus stale, then callers wait for the load and never see the old value', async () => {
    const clock = manualClock(START);
    const subject = counting(clock);
    await subject.cache.get('k');
    subject.change('v2');
    clock.advance(2_500);
    expect(await subject.cache.get('k')).toBe('v2');
  });
});

describe('FailureThrottle', () => {
  it('when one address fails for a client, then that pair is throttled, but the client from another address is not', () => {
    const clock = manualClock(START);
    const throttle = new FailureThrottle(undefined, clock);
    for (let i = 0; i <= PER_CLIENT_AND_ADDRESS.freeFailures; i++) throttle.recordFailure('victim', '203.0.113.9');
    expect(throttle.retryAfterSeconds('victim', '203.0.113.9')).toBeGreaterThan(0);
    expect(throttle.retryAfterSeconds('victim', '198.51.100.7')).toBe(0);
    clock.advance(PER_CLIENT_AND_ADDRESS.baseBlockMs);
    expect(throttle.retryAfterSeconds('victim', '203.0.113.9')).toBe(0);
  });

  it('when one address fails for many clients, then the address is throttled for all of them', () => {
    const throttle = new FailureThrottle();
    for (let i = 0; i <= PER_ADDRESS.freeFailures; i++) throttle.recordFailure(`name-${i}`, '203.0.113.9');
    expect(throttle.retryAfterSeconds('anyone', '203.0.113.9')).toBeGreaterThan(0);
    expect(throttle.retryAfterSeconds('anyone', '203.0.113.10')).toBe(0);
  });

  it('when an IPv6 host moves within its /64, then it is still the same address', () => {
    const throttle = new FailureThrottle();
    for (let i = 0; i <= PER_ADDRESS.freeFailures; i++) throttle.recordFailure(`name-${i}`, `2001:db8:0:1::${i + 1}`);
    expect(throttle.retryAfterSeconds('anyone', '2001:db8:0:1:ffff::1')).toBeGreaterThan(0);
    expect(throttle.retryAfterSeconds('anyone', '2001:db8:0:2::1')).toBe(0);
  });

  it('when an address floods names past the memory bound, then its own record stays and nothing is reset at once', () => {
    const throttle = new FailureThrottle(undefined, manualClock(START), 1_000);
    for (let i = 0; i <= PER_ADDRESS.freeFailures; i++) throttle.recordFailure(`name-${i}`, '203.0.113.9');
    for (let i = 0; i < 5_000; i++) throttle.recordFailure(`flood-${i}`, '203.0.113.9');
    expect(throttle.retryAfterSeconds('victim', '203.0.113.9')).toBeGreaterThan(0);
  });
});
