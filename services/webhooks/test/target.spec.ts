import { describe, expect, it } from 'vitest';
import { checkTargetUrl, isPublicAddress } from '../src/domain/target';
import { invalidPatterns, matchesPatterns, mayReceive } from '../src/domain/endpoint';
import { afterAttempt, parseRetrySchedule } from '../src/domain/delivery';

describe('isPublicAddress', () => {
  it('refuses loopback, private, link-local, CGNAT, multicast and reserved addresses, IPv4 and IPv6', () => {
    for (const address of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:10.0.0.1',
      '::ffff:7f00:1',
      // IPv4-compatible, IPv4-translated, local-use NAT64, 6to4, Teredo, site-local, documentation, benchmarking.
      '::7f00:1',
      '::ffff:0:7f00:1',
      '64:ff9b:1::7f00:1',
      '64:ff9b::808:808',
      '2002:7f00:1::',
      '2001::1',
      'fec0::1',
      '2001:db8::1',
      '198.18.0.1',
      '192.0.2.1',
      '255.255.255.255',
      'not-an-ip',
      '0x7f000001',
    ])
      expect(isPublicAddress(address), address).toBe(false);
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8'])
      expect(isPublicAddress(address), address).toBe(true);
  });
});

describe('checkTargetUrl', () => {
  it('takes https to public hosts, and http or private addresses only when allowed', () => {
    expect(checkTargetUrl('https://hooks.example.com/x', false).ok).toBe(true);
    expect(checkTargetUrl('http://hooks.example.com/x', false).ok).toBe(false);
    expect(checkTargetUrl('https://10.0.0.1/x', false).ok).toBe(false);
    expect(checkTargetUrl('http://127.0.0.1:9000/x', true).ok).toBe(true);
    expect(checkTargetUrl('file:///etc/passwd', true).ok).toBe(false);
    expect(checkTargetUrl('https://user:pw@hooks.example.com/', true).ok).toBe(false);
  });
});

describe('patterns and visibility', () => {
  it('knows the event types and families, and matches them', () => {
    expect(invalidPatterns(['*', 'right.*', 'subscription.renewed', 'service.announce'])).toEqual([]);
    expect(invalidPatterns(['right', 'rights.*', 'sku.upserted', 'right.nope'])).toEqual([
      'right',
      'rights.*',
      'sku.upserted',
      'right.nope',
    ]);
    expect(matchesPatterns(['right.*'], 'right.created')).toBe(true);
    expect(matchesPatterns(['right.*'], 'subscription.created')).toBe(false);
    expect(matchesPatterns(['subscription.renewed'], 'subscription.renewed')).toBe(true);
  });
  it('lets a grantor see what it grants or provides, an admin everything', () => {
    const endpoint = (grantorId: string | null) => ({ grantorId, clocks: false });
    expect(mayReceive(endpoint('A'), { grantorId: 'A', serviceProviderId: null })).toBe(true);
    expect(mayReceive(endpoint('SP'), { grantorId: 'A', serviceProviderId: 'SP' })).toBe(true);
    expect(mayReceive(endpoint('B'), { grantorId: 'A', serviceProviderId: 'SP' })).toBe(false);
    expect(mayReceive(endpoint(null), { grantorId: 'A' })).toBe(true);
  });
  it('lets an endpoint hear a rehearsal on a test clock only when it asked for clocks, an admin’s too', () => {
    const onClock = { grantorId: 'A', serviceProviderId: null, clockId: 'c1' };
    expect(mayReceive({ grantorId: 'A', clocks: false }, onClock)).toBe(false);
    expect(mayReceive({ grantorId: null, clocks: false }, onClock)).toBe(false);
    expect(mayReceive({ grantorId: 'A', clocks: true }, onClock)).toBe(true);
    expect(mayReceive({ grantorId: 'B', clocks: true }, onClock)).toBe(false);
    expect(mayReceive({ grantorId: 'A', clocks: false }, { ...onClock, clockId: null })).toBe(true);
  });
});

describe('the retry schedule', () => {
  it('parses durations and walks them, then fails', () => {
    expect(parseRetrySchedule('5s,5m,30m,2h,1d,250ms')).toEqual([
      5_000, 300_000, 1_800_000, 7_200_000, 86_400_000, 250,
    ]);
    expect(parseRetrySchedule('5s,,2h')).toBeNull();
    expect(parseRetrySchedule('5x')).toBeNull();
    const now = new Date('2026-03-01T00:00:00Z');
    expect(afterAttempt(1, { status: 200 }, now, [1_000])).toEqual({ status: 'delivered', nextAttemptAt: null });
    expect(afterAttempt(1, { status: 500 }, now, [1_000])).toEqual({
      status: 'pending',
      nextAttemptAt: new Date('2026-03-01T00:00:01Z'),
    });
    expect(afterAttempt(2, { status: null }, now, [1_000])).toEqual({ status: 'failed', nextAttemptAt: null });
    expect(afterAttempt(1, { status: 302 }, now, [1_000]).status).toBe('pending');
  });
});
