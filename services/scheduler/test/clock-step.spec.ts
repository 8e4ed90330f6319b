import { describe, expect, it } from 'vitest';
import { latestOf, nextStep, type Attempts, type ClockWork } from '../src/domain/clock';

// docs/decisions/0048: how a test clock's driver steps through an advance.
const at = (text: string) => new Date(text);
const work = (over: Partial<ClockWork> & Pick<ClockWork, 'id' | 'sequence'>): ClockWork => ({
  ref: `${over.id}@${over.sequence}`,
  kind: 'renewal',
  dueAt: null,
  expected: false,
  recordedAt: at('2026-11-26T00:00:00Z'),
  ...over,
});
const advancing = {
  time: at('2026-01-01T00:00:00Z'),
  advancingTo: at('2026-04-01T00:00:00Z'),
  status: 'advancing' as const,
};
const NOW = at('2026-11-26T00:00:10Z');
const never = (): Attempts | undefined => undefined;

describe('a test clock’s step (docs/decisions/0048)', () => {
  it('when an item has several versions, then only the latest counts, per kind of work; a right with nothing due after it is let go', () => {
    const { latest, superseded } = latestOf([
      work({ id: 's', sequence: 1 }),
      work({ id: 's', sequence: 3 }),
      work({ id: 's', sequence: 2 }),
      work({ id: 's', sequence: 1, kind: 'expiry', dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 'r', sequence: 1, kind: 'expiry', dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 'r', sequence: 2, kind: 'expiry' }),
    ]);
    expect(latest.map((one) => one.ref).sort()).toEqual(['s@1', 's@3']);
    expect(superseded.map((one) => one.ref).sort()).toEqual(['r@1', 'r@2', 's@1', 's@2']);
  });

  it('when something is due by the clock’s time, then it is commanded first, ready clock or not', () => {
    const due = work({ id: 's', sequence: 1, dueAt: at('2026-01-01T00:00:00Z') });
    expect(nextStep(advancing, [due], NOW, never)).toEqual({ kind: 'command', work: [due] });
    expect(nextStep({ ...advancing, status: 'ready' }, [due], NOW, never)).toEqual({ kind: 'command', work: [due] });
  });

  it('when commanded work has no newer version yet, or a right a change issued is not recorded, then the clock waits', () => {
    const due = work({ id: 's', sequence: 1, dueAt: at('2026-01-01T00:00:00Z') });
    expect(nextStep(advancing, [due], NOW, () => ({ count: 1, lastAt: at('2026-11-26T00:00:05Z') }))).toEqual({
      kind: 'wait',
    });
    const expected = work({
      id: 'r',
      sequence: 0,
      kind: 'expiry',
      expected: true,
      recordedAt: at('2026-11-26T00:00:09Z'),
    });
    expect(nextStep(advancing, [expected], NOW, never)).toEqual({ kind: 'wait' });
  });

  it('when nothing is outstanding, then it moves to the next due instant, never past its target, and is ready there', () => {
    const later = [
      work({ id: 'a', sequence: 2, dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 'b', sequence: 1, kind: 'expiry', dueAt: at('2026-01-15T00:00:00Z') }),
      work({ id: 'c', sequence: 4, dueAt: null }),
    ];
    expect(nextStep(advancing, later, NOW, never)).toEqual({ kind: 'move', to: at('2026-01-15T00:00:00Z') });
    expect(
      nextStep(advancing, [work({ id: 'a', sequence: 2, dueAt: at('2027-01-01T00:00:00Z') })], NOW, never),
    ).toEqual({ kind: 'move', to: advancing.advancingTo });
    const there = { ...advancing, time: advancing.advancingTo };
    const afterIt = [work({ id: 'a', sequence: 3, dueAt: at('2026-05-01T00:00:00Z') })];
    expect(nextStep(there, afterIt, NOW, never)).toEqual({ kind: 'ready' });
    expect(nextStep({ ...there, status: 'ready' }, afterIt, NOW, never)).toEqual({ kind: 'idle' });
  });

  it('when a command changed nothing for a while, then it is sent again, and after the last attempt it no longer holds the clock', () => {
    const due = work({ id: 's', sequence: 1, dueAt: at('2026-01-01T00:00:00Z') });
    expect(nextStep(advancing, [due], NOW, () => ({ count: 1, lastAt: at('2026-11-25T00:00:00Z') }))).toEqual({
      kind: 'command',
      work: [due],
    });
    expect(nextStep(advancing, [due], NOW, () => ({ count: 3, lastAt: at('2026-11-25T00:00:00Z') }))).toEqual({
      kind: 'move',
      to: advancing.advancingTo,
    });
    const stale = work({
      id: 'r',
      sequence: 0,
      kind: 'expiry',
      expected: true,
      recordedAt: at('2026-11-25T00:00:00Z'),
    });
    expect(nextStep(advancing, [stale], NOW, never)).toEqual({ kind: 'move', to: advancing.advancingTo });
  });
});
