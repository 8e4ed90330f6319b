import type { Principal, ProjectedRight } from '@rs/contracts';
import { describe, expect, it } from 'vitest';
import { EntitlementProjection, REMEMBER_PASSED_MS } from '../src/domain/entitlements';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const ADMIN: Principal = { clientId: 'ops', grantorId: 'ops', admin: true, scheme: 'basic', scopes: [], subject: null };

const right = (sequence: number, patch: Partial<ProjectedRight> = {}): ProjectedRight => ({
  rightId: 'r1',
  connectId: 'alice',
  sequence,
  state: 'ACTIVE',
  timeInterval: '2026-06-01T11:00:00+02:00/2026-06-02T00:00:00+02:00',
  grantorId: 'A',
  serviceProviderId: null,
  sku: 'video',
  used: false,
  quantity: null,
  remaining: null,
  graceEnds: null,
  removed: false,
  ...patch,
});
const REAL = { clockId: null, now: NOW };
const entitled = (projection: EntitlementProjection, at = NOW) =>
  projection.check(ADMIN, 'alice', 'video', { clockId: null, now: at }).entitled;

describe('the entitlement projection (docs/api.md "Entitlement checks")', () => {
  it('when an event of an older generation comes after a newer one, then it changes nothing', () => {
    const projection = new EntitlementProjection();
    expect(projection.apply(right(1), NOW)).toBe(true);
    expect(projection.apply(right(2, { state: 'SUSPENDED' }), NOW)).toBe(true);
    expect(projection.apply(right(1), NOW)).toBe(false);
    expect(projection.apply(right(2), NOW)).toBe(false);
    expect(entitled(projection)).toBe(false);
    expect(projection.apply(right(3), NOW)).toBe(true);
    expect(entitled(projection)).toBe(true);
  });

  it('when a right lives on a test clock, then it counts only where that clock is named, at its time, and leaves by its events, not by real time (docs/api.md "Test clocks")', () => {
    const projection = new EntitlementProjection();
    const january = { clockId: 'c1', timeInterval: '2026-01-01T00:00:00Z/2026-02-01T00:00:00Z' };
    expect(projection.apply(right(1, january), NOW)).toBe(true);
    expect(projection.apply(right(1, { rightId: 'real' }), NOW)).toBe(true);
    projection.sweep(NOW);
    const on = (clockId: string, time: string) => ({ clockId, now: Date.parse(time) });
    const listed = (where: { clockId: string | null; now: number }) =>
      projection.check(ADMIN, 'alice', 'video', where).rights.map((one) => one.rightId);
    expect(listed(on('c1', '2026-01-15T00:00:00Z'))).toEqual(['r1']);
    expect(listed(on('c1', '2026-02-01T00:00:00Z'))).toEqual([]);
    expect(listed(on('c2', '2026-01-15T00:00:00Z'))).toEqual([]);
    // On real time, the rehearsal entitles no one, even at an instant inside its interval.
    expect(listed(REAL)).toEqual(['real']);
    expect(listed({ clockId: null, now: Date.parse('2026-01-15T00:00:00Z') })).toEqual([]);
    expect(projection.check(ADMIN, 'alice', 'video', on('c1', '2026-01-15T00:00:00Z')).clockId).toBe('c1');
    projection.apply(right(2, { ...january, state: 'EXPIRED' }), NOW);
    expect(projection.size).toBe(1);
  });

  it('when a right is removed, then no event of it brings it back, whatever its generation', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1), NOW);
    projection.apply(right(2, { removed: true }), NOW);
    expect(projection.apply(right(5), NOW)).toBe(false);
    expect(entitled(projection)).toBe(false);
    expect(projection.size).toBe(0);
  });

  it('when the check is made before the start, inside, or at the end of the interval, then only inside is entitled, and until keeps the offset', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1), NOW);
    const start = Date.parse('2026-06-01T09:00:00Z');
    const end = Date.parse('2026-06-01T22:00:00Z');
    expect([start - 1000, start, end - 1000, end].map((at) => entitled(projection, at))).toEqual([
      false,
      true,
      true,
      false,
    ]);
    expect(projection.check(ADMIN, 'alice', 'video', REAL).until).toBe('2026-06-02T00:00:00+02:00');
  });

  it('when a user holds several rights of a SKU, then until is the latest end and each right is listed', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1), NOW);
    projection.apply(right(1, { rightId: 'r2', timeInterval: '2026-06-01T00:00:00Z/2026-06-03T00:00:00Z' }), NOW);
    const answer = projection.check(ADMIN, 'alice', 'video', REAL);
    expect(answer.until).toBe('2026-06-03T00:00:00Z');
    expect(answer.rights.map((r) => r.rightId).sort()).toEqual(['r1', 'r2']);
  });

  it('when a non-admin checks, then it sees the rights its grantor grants or provides only', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1, { grantorId: 'A', serviceProviderId: 'P' }), NOW);
    projection.apply(right(1, { rightId: 'r2', grantorId: 'B' }), NOW);
    const as = (grantorId: string): Principal => ({ ...ADMIN, admin: false, grantorId });
    const ids = (grantorId: string) =>
      projection.check(as(grantorId), 'alice', 'video', REAL).rights.map((r) => r.rightId);
    expect([ids('A'), ids('P'), ids('B'), ids('O')]).toEqual([['r1'], ['r1'], ['r2'], []]);
  });

  it('when rights have ended, then a sweep lets them go and a late event of theirs cannot return them', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1, { timeInterval: '2026-06-01T00:00:00Z/2026-06-01T12:30:00Z' }), NOW);
    const later = Date.parse('2026-06-01T13:00:00Z');
    projection.sweep(later);
    expect(projection.size).toBe(0);
    expect(projection.apply(right(1), later)).toBe(false);
    // What was let go is forgotten after a while (memory), but only then.
    projection.sweep(later + REMEMBER_PASSED_MS + 1);
    expect(projection.apply(right(1), later + REMEMBER_PASSED_MS + 1)).toBe(true);
  });

  it('when a projection is rebuilt, then the new one remembers what the old one let go', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1), NOW);
    projection.apply(right(3, { state: 'SUSPENDED' }), NOW);
    const next = projection.emptyCopy();
    // A page read before the suspension was written: older than what the events said.
    expect(next.apply(right(2), NOW)).toBe(false);
    expect(entitled(next)).toBe(false);
  });

  it('when a user holds many rights of a SKU and some are let go in any order, then exactly the others are listed', () => {
    const projection = new EntitlementProjection();
    for (let i = 0; i < 1_000; i++) projection.apply(right(1, { rightId: `r${i}` }), NOW);
    for (const i of [0, 999, 500, 3, 998, 1, 250]) projection.apply(right(2, { rightId: `r${i}`, removed: true }), NOW);
    for (let i = 10; i < 1_000; i += 3) projection.apply(right(2, { rightId: `r${i}`, state: 'SUSPENDED' }), NOW);
    const expected = Array.from({ length: 1_000 }, (_, i) => i).filter(
      (i) => ![0, 999, 500, 3, 998, 1, 250].includes(i) && !(i >= 10 && (i - 10) % 3 === 0),
    );
    const listed = projection.check(ADMIN, 'alice', 'video', REAL).rights.map((r) => Number(r.rightId.slice(1)));
    expect(listed.sort((a, b) => a - b)).toEqual(expected);
    expect(projection.size).toBe(expected.length);
  });
});

describe('the balance of metered rights (docs/api.md "Entitlement checks")', () => {
  it('when a user holds metered rights, then the balance is what they have left, and entitled means it covers the amount asked', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1, { rightId: 'm1', quantity: 10, remaining: 4 }), NOW);
    projection.apply(right(1, { rightId: 'm2', quantity: 5, remaining: 0 }), NOW);
    const checked = projection.check(ADMIN, 'alice', 'video', REAL);
    expect(checked).toMatchObject({ entitled: true, balance: 4 });
    expect(checked.rights.map(({ rightId, quantity, remaining }) => [rightId, quantity, remaining]).sort()).toEqual([
      ['m1', 10, 4],
      ['m2', 5, 0],
    ]);
    expect(projection.check(ADMIN, 'alice', 'video', REAL, 4).entitled).toBe(true);
    expect(projection.check(ADMIN, 'alice', 'video', REAL, 5).entitled).toBe(false);
    // A consumption's event (a newer generation) moves the balance.
    projection.apply(right(2, { rightId: 'm1', quantity: 10, remaining: 0 }), NOW);
    expect(projection.check(ADMIN, 'alice', 'video', REAL)).toMatchObject({ entitled: false, balance: 0 });
  });

  it('when a plain right is listed beside metered ones, then the user is entitled whatever the amount; with none metered the balance is null', () => {
    const projection = new EntitlementProjection();
    projection.apply(right(1, { rightId: 'plain' }), NOW);
    expect(projection.check(ADMIN, 'alice', 'video', REAL)).toMatchObject({ entitled: true, balance: null });
    projection.apply(right(1, { rightId: 'm1', quantity: 3, remaining: 1 }), NOW);
    expect(projection.check(ADMIN, 'alice', 'video', REAL, 100)).toMatchObject({ entitled: true, balance: 1 });
  });
});
