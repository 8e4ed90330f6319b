import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aRight } from './right-fixture';
import {
  asOf,
  decide,
  endAt,
  isActive,
  isInGrace,
  isUsable,
  TRANSITIONS,
  type RightCommand,
  type RightEntity,
} from '../src/domain/right';
import { recordUsage as usageOf } from '../src/domain/metering';

/** Usage of `amount` units, the catalog announcing a first use or not. */
const recordUsage = (right: RightEntity, now: Date, announce: boolean, amount: number) =>
  usageOf(right, { amount, announce }, now);

/** One unit, as a usage without a body asks (a plain right ignores it). */
const ONE = 1;

const T0 = new Date('2026-03-01T00:00:00Z').getTime();
const HOUR = 3_600_000;

const baseRight = (state: RightEntity['state']): RightEntity => aRight({ state });

type Step = { op: RightCommand | 'use' | 'read'; at: number };
const step = fc.record({
  op: fc.constantFrom<Step['op']>('activate', 'suspend', 'read', 'use'),
  at: fc.integer({ min: -2 * HOUR, max: 14 * HOUR }),
});
const initial = fc.constantFrom<RightEntity['state']>('CREATED', 'ACTIVE', 'SUSPENDED');

describe('the right state machine (docs/api.md)', () => {
  it('when any sequence of operations is applied at increasing times, then the invariants hold', () => {
    fc.assert(
      fc.property(initial, fc.array(step, { maxLength: 30 }), (state, steps) => {
        let right = baseRight(state);
        let clock = T0 - 3 * HOUR;
        for (const { op, at } of steps) {
          clock = Math.max(clock, T0 + at); // time never goes back
          const now = new Date(clock);
          const before = right;
          if (op === 'read') {
            // Read as of now, an ended right is EXPIRED: the change the scheduler's command announces.
            right = asOf(right, now);
            if (right === before) continue;
          } else {
            const decision = op === 'use' ? recordUsage(right, now, true, ONE) : decide(right, op, now);
            if (decision.kind !== 'change') continue;
            right = decision.next;
            // Every change emits at least one event.
            expect(decision.events.length).toBeGreaterThan(0);
          }
          // Every change bumps the generation by exactly one.
          expect(right.generation).toBe(before.generation + 1);
          // A used right is never un-used; an expired right never comes back.
          if (before.used) expect(right.used).toBe(true);
          expect(before.state === 'EXPIRED' && right.state !== 'EXPIRED').toBe(false);
          // Expiry happens only once the interval has ended; usage only while active.
          if (right.state === 'EXPIRED' && before.state !== 'EXPIRED') expect(now >= right.end).toBe(true);
          if (op === 'use') expect(isActive(before, now)).toBe(true);
          // Every state reached is one the table knows.
          expect(Object.keys(TRANSITIONS)).toContain(right.state);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('when a command is repeated or an ended right read again, then the second changes nothing (idempotent)', () => {
    fc.assert(
      fc.property(initial, fc.constantFrom<RightCommand>('activate', 'suspend'), (state, command) => {
        const now = new Date(T0 + 11 * HOUR);
        const first = decide(baseRight(state), command, now);
        const after = first.kind === 'change' ? first.next : baseRight(state);
        expect(decide(after, command, now).kind).not.toBe('change');
      }),
    );
    // Reading an ended right as of a later instant shows the same expiry, at the same generation.
    const expired = asOf(baseRight('ACTIVE'), new Date(T0 + 11 * HOUR));
    expect(expired).toMatchObject({ state: 'EXPIRED', generation: 2 });
    expect(asOf(expired, new Date(T0 + 12 * HOUR))).toBe(expired);
  });

  it('when an expired right is activated or suspended, then it is a conflict', () => {
    const expired = baseRight('EXPIRED');
    expect(decide(expired, 'activate', new Date(T0)).kind).toBe('conflict');
    expect(decide(expired, 'suspend', new Date(T0)).kind).toBe('conflict');
  });

  it('when a right is used while active, then once sets used and emits right.used and service.announce', () => {
    const right = baseRight('ACTIVE');
    const inside = new Date(T0 + HOUR);
    const first = recordUsage(right, inside, true, ONE);
    expect(first).toMatchObject({
      kind: 'change',
      events: ['right.used', 'service.announce'],
      next: { used: true, generation: 2 },
    });
    expect(recordUsage((first as { next: RightEntity }).next, inside, true, ONE).kind).toBe('unchanged');
    expect(recordUsage(right, inside, false, ONE)).toMatchObject({ events: ['right.used'] });
    expect(recordUsage(right, new Date(T0 + 10 * HOUR), true, ONE).kind).toBe('conflict'); // the end is exclusive
    expect(recordUsage(baseRight('SUSPENDED'), inside, true, ONE).kind).toBe('conflict');
  });
});

describe('usage of a metered right (docs/decisions/0045)', () => {
  const metered = (remaining: number, fields: Partial<RightEntity> = {}) =>
    aRight({ quantity: 10, remaining, ...fields });
  const inside = new Date('2026-03-01T05:00:00Z');

  it('when units are left, then the amount is taken, right.consumed says so, and the first use is also right.used', () => {
    const first = recordUsage(metered(10), inside, true, 3);
    expect(first).toMatchObject({
      kind: 'change',
      next: { remaining: 7, used: true, generation: 2 },
      events: ['right.used', 'service.announce', 'right.consumed'],
      consumed: 3,
    });
    const next = (first as { next: RightEntity }).next;
    expect(recordUsage(next, inside, true, 7)).toMatchObject({
      next: { remaining: 0 },
      events: ['right.consumed'],
      consumed: 7,
    });
  });

  it('when fewer units are left than asked for, then it is a conflict naming them, and nothing is taken', () => {
    expect(recordUsage(metered(2), inside, false, 3)).toEqual({
      kind: 'conflict',
      reason: 'remaining: right R1 has 2 units, 3 asked',
    });
  });

  it('when the right is not active, then no unit is taken', () => {
    expect(recordUsage(metered(10, { state: 'SUSPENDED' }), inside, false, 1).kind).toBe('conflict');
  });
});

describe('grace (docs/api.md "Grace")', () => {
  const END = T0 + 10 * HOUR;
  const graced = aRight({ grace: 'PT2H' });

  it('when the interval has ended and the grace has not, then the right is in grace: not active, still ACTIVE, usable', () => {
    const now = new Date(END + HOUR);
    const read = asOf(graced, now);
    expect(read.state).toBe('ACTIVE');
    expect([isActive(read, now), isInGrace(read, now), isUsable(read, now)]).toEqual([false, true, true]);
    expect(recordUsage(read, now, false, ONE)).toMatchObject({ kind: 'change' });
  });

  it('when the grace has ended, then the right is EXPIRED as of the grace end; without a grace, as of its interval end', () => {
    expect(asOf(graced, new Date(END + 2 * HOUR))).toMatchObject({
      state: 'EXPIRED',
      updatedAt: new Date(END + 2 * HOUR),
    });
    expect(asOf(aRight(), new Date(END))).toMatchObject({ state: 'EXPIRED', updatedAt: new Date(END) });
    // A suspended right has no grace to use, and expires when the grace ends all the same.
    const suspended = aRight({ grace: 'PT2H', state: 'SUSPENDED' });
    expect([isInGrace(suspended, new Date(END + HOUR)), asOf(suspended, new Date(END + HOUR)).state]).toEqual([
      false,
      'SUSPENDED',
    ]);
  });
});

describe('the end of a right a plan change replaced (docs/api.md "Plan changes")', () => {
  const at = { instant: new Date(T0 + 4 * HOUR), text: '2026-03-01T04:00:00Z' };

  it('when the change falls inside its interval, then the interval ends there, without grace, EXPIRED, once; also when the end arrives after the right ended by itself', () => {
    const ended = endAt(aRight({ grace: 'PT2H' }), at, new Date(T0 + 4 * HOUR + 500));
    expect(ended).toMatchObject({
      kind: 'change',
      next: {
        state: 'EXPIRED',
        timeInterval: '2026-03-01T00:00:00Z/2026-03-01T04:00:00Z',
        end: at.instant,
        grace: null,
        expiresAt: at.instant,
        generation: 2,
      },
      events: ['right.expired'],
    });
    if (ended.kind !== 'change') throw new Error('a change');
    expect(endAt(ended.next, at, new Date(T0 + 5 * HOUR))).toEqual({ kind: 'unchanged' });
    // Late: read EXPIRED at its own end, the record still shows the change's instant.
    const late = asOf(aRight(), new Date(T0 + 11 * HOUR));
    expect(endAt(late, at, new Date(T0 + 11 * HOUR))).toMatchObject({
      kind: 'change',
      next: { state: 'EXPIRED', timeInterval: '2026-03-01T00:00:00Z/2026-03-01T04:00:00Z' },
    });
  });

  it('when its interval does not hold the change, then it keeps its interval: in grace it expires now; starting then, it is removed; expired, nothing changes', () => {
    const inGrace = aRight({
      grace: 'PT8H',
      end: new Date(T0 + 2 * HOUR),
      timeInterval: '2026-03-01T00:00:00Z/2026-03-01T02:00:00Z',
    });
    expect(endAt(inGrace, at, new Date(T0 + 4 * HOUR))).toMatchObject({
      next: { state: 'EXPIRED', expiresAt: at.instant, timeInterval: inGrace.timeInterval },
    });
    // Starting only then (an earlier change's rest of the period): it never held anything, and goes.
    const starting = aRight({ start: at.instant, timeInterval: '2026-03-01T04:00:00Z/2026-03-01T10:00:00Z' });
    expect(endAt(starting, at, new Date(T0 + 4 * HOUR))).toMatchObject({
      kind: 'change',
      removes: true,
      events: ['right.removed'],
    });
    expect(
      endAt(
        aRight({
          state: 'EXPIRED',
          end: new Date(T0 + 2 * HOUR),
          timeInterval: '2026-03-01T00:00:00Z/2026-03-01T02:00:00Z',
        }),
        at,
        new Date(T0 + 4 * HOUR),
      ),
    ).toEqual({ kind: 'unchanged' });
  });
});
