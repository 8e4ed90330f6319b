import { describe, expect, it } from 'vitest';
import { TrustedProxies } from '../src/domain/source-address';
import { HashLanes } from '../src/auth/hash-lanes';
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

  /** A cache that loaded `v1` for `k`, whose value has since become `v2`, `ageMs` ago. */
  async function changedSince(ageMs: number) {
    const clock = manualClock(START);
    const subject = counting(clock);
    await subject.cache.get('k');
    subject.change('v2');
    clock.advance(ageMs);
    return subject;
  }

  it('when the value is stale, then callers get it at once while one load refreshes it; the next get sees the new value', async () => {
    const subject = await changedSince(1_500);
    subject.hold();
    const served = await Promise.all(Array.from({ length: 10 }, () => subject.cache.get('k')));
    expect(served).toEqual(Array(10).fill('v1'));
    subject.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await subject.cache.get('k')).toBe('v2');
    expect(subject.loads()).toBe(2);
  });

  it('when the value is older than fresh plus stale, then callers wait for the load and never see the old value', async () => {
    const subject = await changedSince(2_500);
    expect(await subject.cache.get('k')).toBe('v2');
  });
});

describe('FailureThrottle (docs/api.md "No lock-out")', () => {
  /** Attempts of the client from the address `who(i)` names, for i from 0 while below `count`. */
  const attempts = (throttle: FailureThrottle, count: number, who: (i: number) => [client: string, address: string]) =>
    Array.from({ length: count }, (_, i) => throttle.attempt(...who(i)));

  it('when one address tries a client past its free attempts, then that pair waits, but the client from another address does not', () => {
    const clock = manualClock(START);
    const throttle = new FailureThrottle(undefined, clock);
    const free = PER_CLIENT_AND_ADDRESS.freeFailures;
    expect(attempts(throttle, free, () => ['victim', '203.0.113.9'])).toEqual(Array(free).fill(0));
    expect(throttle.attempt('victim', '203.0.113.9')).toBeGreaterThan(0);
    expect(throttle.attempt('victim', '198.51.100.7')).toBe(0);
    clock.advance(PER_CLIENT_AND_ADDRESS.baseBlockMs);
    expect(throttle.attempt('victim', '203.0.113.9')).toBe(0);
  });

  it('when an attempt verifies its secret, then it is taken back: a client verifying often is never refused', () => {
    const throttle = new FailureThrottle();
    for (let i = 0; i < 3 * PER_ADDRESS.freeFailures; i++) {
      expect(throttle.attempt(`client-${i}`, '203.0.113.9')).toBe(0);
      throttle.succeeded(`client-${i}`, '203.0.113.9');
    }
  });

  it('when one address tries many clients, then the address waits for all of them', () => {
    const throttle = new FailureThrottle();
    attempts(throttle, PER_ADDRESS.freeFailures, (i) => [`name-${i}`, '203.0.113.9']);
    expect(throttle.attempt('anyone', '203.0.113.9')).toBeGreaterThan(0);
    expect(throttle.attempt('anyone', '203.0.113.10')).toBe(0);
  });

  it('when an IPv6 host moves within its /64, then it is still the same address', () => {
    const throttle = new FailureThrottle();
    attempts(throttle, PER_ADDRESS.freeFailures, (i) => [`name-${i}`, `2001:db8:0:1::${i + 1}`]);
    expect(throttle.attempt('anyone', '2001:db8:0:1:ffff::1')).toBeGreaterThan(0);
    expect(throttle.attempt('anyone', '2001:db8:0:2::1')).toBe(0);
  });

  it('when an address floods names past the memory bound, then its own record stays and nothing is reset at once', () => {
    const throttle = new FailureThrottle(undefined, manualClock(START), 1_000);
    attempts(throttle, PER_ADDRESS.freeFailures, (i) => [`name-${i}`, '203.0.113.9']);
    attempts(throttle, 5_000, (i) => [`flood-${i}`, '203.0.113.9']);
    expect(throttle.attempt('victim', '203.0.113.9')).toBeGreaterThan(0);
  });
});

describe('TrustedProxies (docs/api.md): the source address', () => {
  const proxies = new TrustedProxies('10.0.0.0/8, 192.0.2.1, 2001:db8::/32');

  it('when the peer is not a trusted proxy, then it is the source, whatever X-Forwarded-For claims', () => {
    expect(proxies.sourceOf('198.51.100.7', '203.0.113.1')).toBe('198.51.100.7');
    expect(new TrustedProxies(undefined).sourceOf('::ffff:10.1.2.3', '203.0.113.1')).toBe('10.1.2.3');
  });

  it('when the peer is a trusted proxy, then the nearest untrusted address of X-Forwarded-For is the source', () => {
    expect(proxies.sourceOf('10.1.2.3', '203.0.113.1')).toBe('203.0.113.1');
    // The client wrote the first entry itself; the ingress appended what it saw.
    expect(proxies.sourceOf('::ffff:10.1.2.3', 'forged, 198.51.100.9, 10.9.9.9')).toBe('198.51.100.9');
    expect(proxies.sourceOf('2001:db8::1', '192.0.2.1, 203.0.113.5')).toBe('203.0.113.5');
    // Garbage ends the walk at the last address that could be believed.
    expect(proxies.sourceOf('10.1.2.3', '203.0.113.1, not-an-address')).toBe('10.1.2.3');
    expect(proxies.sourceOf('10.1.2.3', undefined)).toBe('10.1.2.3');
  });

  it('when TRUSTED_PROXIES is not addresses or CIDRs, then it is refused', () => {
    expect(() => new TrustedProxies('10.0.0.0/33')).toThrow(/prefix length/);
    expect(() => new TrustedProxies('ingress.local')).toThrow(/not an address/);
  });
});

describe('HashLanes (docs/api.md): bounded hashing, shared between addresses in turn', () => {
  it('when one lane floods, then another lane is served at the next free slot, and past the bound nothing is queued', async () => {
    const lanes = new HashLanes(1, 9);
    const order: string[] = [];
    const gates: Array<() => void> = [];
    const task = (name: string) => () =>
      new Promise<void>((resolve) => {
        order.push(name);
        gates.push(resolve);
      });
    const runs = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => lanes.run('flood', task(`flood-${i}`)));
    runs.push(lanes.run('other', task('other')));
    expect(runs.every((run) => run !== null)).toBe(true);
    expect(lanes.run('late', task('late'))).toBeNull();
    for (let served = 0; served < 3; served++) {
      gates.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(order.slice(0, 3)).toEqual(['flood-0', 'flood-1', 'other']);
  });
});
