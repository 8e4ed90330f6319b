import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  available,
  consume,
  lapsedHolds,
  placeHold,
  planConsumption,
  settleHold,
  type Candidate,
  type Meter,
} from '../src/domain/metering';

// The rules of metered rights (docs/decisions/0045), pure.

const meter = (remaining: number, holds: Meter['holds'] = []): Meter => ({ quantity: 10, remaining, holds });
const at = (iso: string) => new Date(iso);
const hold = (id: string, amount: number, until = '2026-12-01T00:05:00Z') => ({ id, amount, until: at(until) });

describe('consuming from one right', () => {
  it('when units are available, then they are taken, and the right keeps nothing of the consumption but its balance', () => {
    expect(consume(meter(10), 3)).toEqual({ kind: 'changed', next: meter(7) });
  });

  it('when held units leave too few, then nothing is taken and the available units are said', () => {
    expect(consume(meter(5, [hold('r1', 4)]), 2)).toEqual({ kind: 'short', available: 1 });
    expect(consume(meter(0), 1)).toEqual({ kind: 'short', available: 0 });
  });
});

describe('holds: reservations and consumptions across rights', () => {
  it('when a hold is placed, then others see fewer units; placed again, it is already there', () => {
    const placed = placeHold(meter(5), hold('r1', 3), 100);
    expect(placed.kind).toBe('changed');
    const next = (placed as { next: Meter }).next;
    expect(available(next)).toBe(2);
    expect(next.remaining).toBe(5);
    expect(placeHold(next, hold('r1', 3), 100)).toEqual({ kind: 'already' });
    expect(placeHold(next, hold('r2', 3), 100)).toEqual({ kind: 'short', available: 2 });
  });

  it('when a right holds its most holds, then another is refused however many units are free; settling one makes room', () => {
    const full = meter(100, [hold('r1', 1), hold('r2', 1)]);
    expect(placeHold(full, hold('r3', 1), 2)).toEqual({ kind: 'full', max: 2 });
    expect(placeHold(full, hold('r2', 1), 2)).toEqual({ kind: 'already' });
    const settled = settleHold(full, 'r1', 0);
    expect(placeHold((settled as { next: Meter }).next, hold('r3', 1), 2).kind).toBe('changed');
  });

  it('when a hold is settled for part of it, then that part is consumed and the rest freed; settled again, nothing changes', () => {
    const settled = settleHold(meter(5, [hold('r1', 3), hold('r2', 1)]), 'r1', 2);
    expect(settled).toEqual({ kind: 'changed', next: meter(3, [hold('r2', 1)]) });
    expect(settleHold(meter(3, [hold('r2', 1)]), 'r1', 2)).toEqual({ kind: 'already' });
  });

  it('when a hold is settled for nothing (released, or aborted), then all its units are freed and nothing is consumed', () => {
    expect(settleHold(meter(5, [hold('r1', 3)]), 'r1', 0)).toEqual({ kind: 'changed', next: meter(5) });
  });

  it('when a settlement names more than was held, then only what was held is consumed', () => {
    expect(settleHold(meter(5, [hold('r1', 3)]), 'r1', 9)).toEqual({ kind: 'changed', next: meter(2) });
  });

  it('when time passes, then the holds whose time is up are the lapsed ones', () => {
    const holds = [hold('a', 1, '2026-12-01T00:01:00Z'), hold('b', 1, '2026-12-01T00:09:00Z')];
    expect(lapsedHolds(meter(5, holds), at('2026-12-01T00:05:00Z')).map(({ id }) => id)).toEqual(['a']);
  });

  it('whatever holds are placed, consumed and settled, in any order, the available units never go below 0', () => {
    type Step = { kind: 'consume' | 'hold' | 'settle'; id: number; amount: number };
    const step = fc.record({
      kind: fc.constantFrom<'consume' | 'hold' | 'settle'>('consume', 'hold', 'settle'),
      id: fc.integer({ min: 0, max: 5 }),
      amount: fc.integer({ min: 0, max: 6 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), fc.array(step, { maxLength: 40 }), (start, steps: Step[]) => {
        let current = meter(start);
        let consumed = 0;
        for (const { kind, id, amount } of steps) {
          const before = current.remaining;
          const change =
            kind === 'consume'
              ? consume(current, Math.max(1, amount))
              : kind === 'hold'
                ? placeHold(current, hold(`h${id}`, Math.max(1, amount)), 4)
                : settleHold(current, `h${id}`, amount);
          if (change.kind === 'changed') current = change.next;
          consumed += before - current.remaining;
          expect(available(current)).toBeGreaterThanOrEqual(0);
          expect(current.remaining).toBeGreaterThanOrEqual(0);
          expect(current.holds.length).toBeLessThanOrEqual(4);
        }
        expect(current.remaining).toBe(start - consumed);
      }),
    );
  });
});

describe('the burn order of a consumption by SKU', () => {
  const candidate = (rightId: string, end: string, createdAt: string, units: number): Candidate => ({
    rightId,
    end: at(end),
    createdAt: at(createdAt),
    available: units,
  });

  it('when several rights hold units, then those ending first give first, then the oldest', () => {
    const rights = [
      candidate('late', '2027-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 5),
      candidate('soon-new', '2026-12-01T00:00:00Z', '2026-11-02T00:00:00Z', 2),
      candidate('soon-old', '2026-12-01T00:00:00Z', '2026-11-01T00:00:00Z', 2),
    ];
    expect(planConsumption(rights, 5)).toEqual([
      { rightId: 'soon-old', amount: 2 },
      { rightId: 'soon-new', amount: 2 },
      { rightId: 'late', amount: 1 },
    ]);
  });

  it('when they hold fewer units than asked for together, then there is no plan: nothing is consumed', () => {
    const rights = [candidate('a', '2026-12-01T00:00:00Z', '2026-11-01T00:00:00Z', 2)];
    expect(planConsumption(rights, 3)).toBeNull();
    expect(planConsumption([], 1)).toBeNull();
  });

  it('when a right has nothing available, then the plan passes it by', () => {
    const rights = [
      candidate('empty', '2026-11-30T00:00:00Z', '2026-11-01T00:00:00Z', 0),
      candidate('full', '2026-12-01T00:00:00Z', '2026-11-01T00:00:00Z', 4),
    ];
    expect(planConsumption(rights, 1)).toEqual([{ rightId: 'full', amount: 1 }]);
  });
});
