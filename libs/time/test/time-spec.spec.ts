import fc from 'fast-check';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import {
  formatDateTime,
  nextPeriodStart,
  parseTimeSpec,
  periodExists,
  periodIndexAt,
  periodStart,
  subscriptionEnd,
  type TimeSpec,
} from '../src/index';

const spec = (text: string): TimeSpec => {
  const parsed = parseTimeSpec(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
};
const at = (text: string) => DateTime.fromISO(text, { setZone: true });

describe('parseTimeSpec (docs/api.md "Subscription timeSpec")', () => {
  it("when given R/<start>/<period> or R<n>/<start>/<end>/<period>, then origTimeSpec keeps the client's parts", () => {
    expect(spec('R/2026-01-31T00:00:00+01:00/P1M')).toMatchObject({
      repetitions: null,
      end: null,
      origTimeSpec: 'R/2026-01-31T00:00:00+01:00/P1M',
    });
    const bounded = spec('R12/2026-01-01T00:00:00Z/2027-01-01T00:00:00Z/P1M');
    expect(bounded.repetitions).toBe(12);
    expect(bounded.origTimeSpec).toBe('R12/2026-01-01T00:00:00Z/P1M');
    expect(formatDateTime(bounded.end!)).toBe('2027-01-01T00:00:00Z');
  });

  it('when the spec is malformed, then the reason says why', () => {
    const reason = (text: string) => {
      const parsed = parseTimeSpec(text);
      return parsed.ok ? 'accepted' : parsed.reason;
    };
    expect(reason('R0/2026-01-01T00:00:00Z/P1M')).toMatch(/number of periods must be from 1/);
    expect(reason('R/2026-01-01T00:00:00Z/P')).toMatch(/not an ISO 8601 duration/);
    expect(reason('R/2026-01-01T00:00:00Z/PT0S')).toMatch(/must be positive/);
    expect(reason('R/2026-01-01T00:00:00Z/P-1D')).toMatch(/not an ISO 8601 duration/);
    expect(reason('R/2026-01-01T00:00:00/P1D')).toMatch(/has no offset/);
    expect(reason('R/2026-02-01T00:00:00Z/2026-01-01T00:00:00Z/P1D')).toMatch(/end must be after start/);
    expect(reason('X/2026-01-01T00:00:00Z/P1D')).toMatch(/not R or R<n>/);
    expect(reason('2026-01-01T00:00:00Z/P1D')).toMatch(/must be R\[n\]/);
  });
});

describe('period arithmetic', () => {
  it('when months end on different days, then each period is computed from the start without drift', () => {
    const monthly = spec('R/2026-01-31T00:00:00+01:00/P1M');
    expect([0, 1, 2, 3].map((k) => formatDateTime(periodStart(monthly, k)))).toEqual([
      '2026-01-31T00:00:00+01:00',
      '2026-02-28T00:00:00+01:00',
      '2026-03-31T00:00:00+01:00',
      '2026-04-30T00:00:00+01:00',
    ]);
    const leap = spec('R/2028-02-29T12:00:00-05:00/P1Y');
    expect(formatDateTime(periodStart(leap, 1))).toBe('2029-02-28T12:00:00-05:00');
    expect(formatDateTime(periodStart(leap, 4))).toBe('2032-02-29T12:00:00-05:00');
  });

  it('when n or the end limit the subscription, then periods stop there and the end is the earlier', () => {
    const limited = spec('R3/2026-01-01T00:00:00Z/P1D');
    expect([0, 1, 2, 3].map((k) => periodExists(limited, k))).toEqual([true, true, true, false]);
    expect(formatDateTime(subscriptionEnd(limited)!)).toBe('2026-01-04T00:00:00Z');
    const ended = spec('R/2026-01-01T00:00:00Z/2026-01-02T12:00:00Z/P1D');
    expect([0, 1, 2].map((k) => periodExists(ended, k))).toEqual([true, true, false]);
    expect(formatDateTime(subscriptionEnd(ended)!)).toBe('2026-01-02T12:00:00Z');
    expect(subscriptionEnd(spec('R/2026-01-01T00:00:00Z/P1D'))).toBeNull();
    expect(nextPeriodStart(limited, at('2026-01-02T05:00:00Z'))).toMatchObject({ k: 2 });
    expect(nextPeriodStart(limited, at('2026-01-03T05:00:00Z'))).toBeNull();
  });

  const periods = fc.constantFrom('PT2S', 'PT30M', 'PT1H', 'P1D', 'P7D', 'P1M', 'P3M', 'P1Y', 'P1M15D');
  const offsets = fc.constantFrom('Z', '+01:00', '-05:00', '+05:45', '+14:00');
  const starts = fc
    .record({
      year: fc.integer({ min: 2000, max: 2060 }),
      month: fc.integer({ min: 1, max: 12 }),
      day: fc.integer({ min: 1, max: 31 }),
      hour: fc.integer({ min: 0, max: 23 }),
    })
    .map(({ year, month, day, hour }) =>
      DateTime.utc(year, month, Math.min(day, DateTime.utc(year, month).daysInMonth!), hour),
    );

  it('when any start, period and offset are combined, then period starts strictly increase', () => {
    fc.assert(
      fc.property(starts, periods, offsets, (start, period, offset) => {
        const s = spec(`R/${start.toISO({ suppressMilliseconds: true })!.replace('Z', offset)}/${period}`);
        for (let k = 0; k < 40; k++)
          expect(periodStart(s, k + 1).toMillis()).toBeGreaterThan(periodStart(s, k).toMillis());
      }),
      { numRuns: 300 },
    );
  });

  it('when any instant after the start is taken, then it lies in exactly one period', () => {
    fc.assert(
      fc.property(
        starts,
        periods,
        offsets,
        fc.integer({ min: 0, max: 3 * 365 * 24 * 3600 }),
        (start, period, offset, seconds) => {
          const s = spec(`R/${start.toISO({ suppressMilliseconds: true })!.replace('Z', offset)}/${period}`);
          const instant = s.start.plus({ seconds });
          const k = periodIndexAt(s, instant);
          expect(periodStart(s, k).toMillis()).toBeLessThanOrEqual(instant.toMillis());
          expect(periodStart(s, k + 1).toMillis()).toBeGreaterThan(instant.toMillis());
          expect(nextPeriodStart(s, instant)?.k).toBe(k + 1);
        },
      ),
      { numRuns: 500 },
    );
  });
});
