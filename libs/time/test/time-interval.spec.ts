import { describe, expect, it } from 'vitest';
import { parseTimeInterval } from '../src/index';

describe('parseTimeInterval (docs/api.md "Time")', () => {
  it('when given start/end, start/duration or duration/end, then it is stored as start/end with the client offsets', () => {
    expect(parseTimeInterval('2026-01-31T00:00:00+01:00/2026-02-28T00:00:00+01:00')).toMatchObject({
      ok: true,
      value: { text: '2026-01-31T00:00:00+01:00/2026-02-28T00:00:00+01:00' },
    });
    expect(parseTimeInterval('2026-01-31T00:00:00+01:00/P1M')).toMatchObject({
      ok: true,
      value: { text: '2026-01-31T00:00:00+01:00/2026-02-28T00:00:00+01:00' },
    });
    expect(parseTimeInterval('PT2H/2026-05-01T12:00:00-04:00')).toMatchObject({
      ok: true,
      value: { text: '2026-05-01T10:00:00-04:00/2026-05-01T12:00:00-04:00' },
    });
    const utc = parseTimeInterval('2026-01-01T00:00:00.789Z/2026-01-02T00:00:00Z');
    expect(utc).toMatchObject({ ok: true, value: { text: '2026-01-01T00:00:00Z/2026-01-02T00:00:00Z' } });
    expect(utc.ok && utc.value.start.toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });

  it('when the interval is malformed, then the reason says why', () => {
    const reason = (text: string) => {
      const parsed = parseTimeInterval(text);
      return parsed.ok ? 'accepted' : parsed.reason;
    };
    expect(reason('2026-01-01T00:00:00Z')).toMatch(/must be <start>\/<end>/);
    expect(reason('2026-01-01T00:00:00/P1D')).toMatch(/has no offset/);
    expect(reason('2026-01-02T00:00:00Z/2026-01-01T00:00:00Z')).toMatch(/end must be after start/);
    expect(reason('2026-01-01T00:00:00Z/P')).toMatch(/not an ISO 8601 duration/);
    expect(reason('2026-02-30T00:00:00Z/P1D')).toMatch(/not a valid date-time/);
    expect(reason('P1D/P2D')).toMatch(/not an ISO 8601 date-time/);
    expect(reason('2026-01-01T00:00:00Z/PT0S')).toMatch(/end must be after start/);
    expect(reason('yesterday/today')).toMatch(/not an ISO 8601 date-time/);
  });
});

describe('parsing remembered (memo.ts)', () => {
  it('when the same interval is parsed twice, then each caller gets its own instants', () => {
    const first = parseTimeInterval('2026-03-01T00:00:00Z/P1M');
    if (!first.ok) throw new Error(first.reason);
    first.value.start.setUTCFullYear(1999);
    const second = parseTimeInterval('2026-03-01T00:00:00Z/P1M');
    expect(second.ok && second.value.start.toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(second.ok && second.value.text).toBe('2026-03-01T00:00:00Z/2026-04-01T00:00:00Z');
  });

  it('when more distinct inputs come than are remembered, then every answer is still right', () => {
    const day = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 86_400_000).toISOString().replace('.000Z', 'Z');
    for (let i = 0; i < 5_000; i++) {
      const parsed = parseTimeInterval(`${day(i)}/P1D`);
      expect(parsed.ok && parsed.value.text).toBe(`${day(i)}/${day(i + 1)}`);
    }
    const again = parseTimeInterval(`${day(0)}/P1D`);
    expect(again.ok && again.value.end.toISOString()).toBe(new Date(day(1)).toISOString());
  });
});
