import { describe, expect, it } from 'vitest';
import { latestOf, nextStep, passedInstants, type Attempts, type ClockWork } from '../src/domain/clock';

// docs/decisions/0048: how a test clock's driver takes an advance.
const at = (text: string) => new Date(text);
const work = (over: Partial<ClockWork> & Pick<ClockWork, 'id' | 'sequence'>): ClockWork => ({
  ref: `${over.id}@${over.sequence}`,
  kind: 'renewal',
  dueAt: null,
  expected: false,
  recordedAt: at('2026-11-26T00:00:00Z'),
  commandedAt: null,
  instant: over.dueAt ?? null,
  ...over,
});
const advancing = {
  time: at('2026-01-01T00:00:00Z'),
  advancingTo: at('2026-04-01T00:00:00Z'),
  status: 'advancing' as const,
};
const NOW = at('2026-11-26T00:00:10Z');
const never = (): Attempts | undefined => undefined;
const refs = (versions: readonly ClockWork[]) => versions.map((one) => one.ref).sort();

describe('a test clock’s step (docs/decisions/0048)', () => {
  it('when an item has several versions, then only the latest counts, per kind of work; a right with nothing due after it is done', () => {
    const { latest } = latestOf([
      work({ id: 's', sequence: 1, dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 's', sequence: 3, dueAt: at('2026-04-01T00:00:00Z') }),
      work({ id: 's', sequence: 2, dueAt: at('2026-03-01T00:00:00Z') }),
      work({ id: 's', sequence: 1, kind: 'expiry', dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 'r', sequence: 1, kind: 'expiry', dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 'r', sequence: 2, kind: 'expiry', instant: at('2026-02-01T00:00:00Z') }),
    ]);
    expect(refs(latest)).toEqual(['s@1', 's@3']);
  });

  it('when a version is superseded by one kept under an earlier instant, then it is let go at once; any other goes with its instant', () => {
    const { letGo } = latestOf([
      // A right ended early (its end moved to February): the March version must not outlive it.
      work({ id: 'r', sequence: 1, kind: 'expiry', dueAt: at('2026-03-01T00:00:00Z') }),
      work({ id: 'r', sequence: 2, kind: 'expiry', dueAt: at('2026-02-01T00:00:00Z') }),
      // Renewals move forward: each version goes when the time passes it.
      work({ id: 's', sequence: 1, dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 's', sequence: 2, dueAt: at('2026-03-01T00:00:00Z') }),
      // An expected right, kept under the instant that issued it, and its creation.
      work({ id: 'e', sequence: 0, kind: 'expiry', expected: true, instant: at('2026-02-01T00:00:00Z') }),
      work({ id: 'e', sequence: 1, kind: 'expiry', dueAt: at('2026-03-01T00:00:00Z') }),
      // A subscription ended for good (kept under no instant) lets its last due version go by its instant.
      work({ id: 'x', sequence: 1, dueAt: at('2026-02-01T00:00:00Z') }),
      work({ id: 'x', sequence: 2 }),
    ]);
    expect(refs(letGo)).toEqual(['r@1']);
  });

  it('when the time has passed instants, then they go but for one where something is still outstanding', () => {
    const late = work({ id: 'l', sequence: 1, kind: 'expiry', dueAt: at('2026-01-15T00:00:00Z') });
    const versions = [
      work({ id: 's', sequence: 1, dueAt: at('2026-01-01T00:00:00Z') }),
      work({ id: 'r', sequence: 1, kind: 'expiry', dueAt: at('2026-02-01T00:00:00Z') }),
      late,
      work({ id: 'x', sequence: 2 }),
      work({ id: 'f', sequence: 1, dueAt: at('2026-03-01T00:00:00Z') }),
    ];
    expect(passedInstants(versions, [late], at('2026-03-01T00:00:00Z'))).toEqual([
      at('2026-01-01T00:00:00Z'),
      at('2026-02-01T00:00:00Z'),
    ]);
  });

  it('when things are due within the advance, then each is commanded at once, whatever the clock’s time, and the time stays at the earliest', () => {
    const now = work({ id: 's', sequence: 1, dueAt: at('2026-01-01T00:00:00Z') });
    const later = work({ id: 't', sequence: 1, kind: 'expiry', dueAt: at('2026-03-01T00:00:00Z') });
    const beyond = work({ id: 'u', sequence: 1, dueAt: at('2026-05-01T00:00:00Z') });
    expect(nextStep(advancing, [now, later, beyond], NOW, never)).toEqual({
      command: [now, later],
      outstanding: [now, later],
      time: advancing.time,
      ready: false,
    });
    // A ready clock commands what is due by its time (a subscription created on it may start then).
    const ready = { ...advancing, advancingTo: advancing.time, status: 'ready' as const };
    expect(nextStep(ready, [now, later], NOW, never)).toMatchObject({ command: [now], time: ready.time, ready: false });
  });

  it('when the recorder commanded an item, or the driver did lately, then it is not commanded again but holds the clock’s time', () => {
    const recorded = work({
      id: 's',
      sequence: 2,
      dueAt: at('2026-02-01T00:00:00Z'),
      commandedAt: at('2026-11-26T00:00:05Z'),
    });
    const driven = work({ id: 't', sequence: 1, kind: 'expiry', dueAt: at('2026-03-01T00:00:00Z') });
    const lately = (ref: string) => (ref === driven.ref ? { count: 1, lastAt: at('2026-11-26T00:00:05Z') } : undefined);
    expect(nextStep(advancing, [recorded, driven], NOW, lately)).toEqual({
      command: [],
      outstanding: [recorded, driven],
      time: at('2026-02-01T00:00:00Z'),
      ready: false,
    });
  });

  it('when a right a change issued is not recorded yet, then the clock’s time stays at the change’s instant and it is not ready', () => {
    const expected = work({
      id: 'r',
      sequence: 0,
      kind: 'expiry',
      expected: true,
      recordedAt: at('2026-11-26T00:00:09Z'),
      instant: at('2026-02-01T00:00:00Z'),
    });
    const later = work({ id: 's', sequence: 2, dueAt: at('2026-03-01T00:00:00Z'), commandedAt: NOW });
    expect(nextStep(advancing, [expected, later], NOW, never)).toMatchObject({
      command: [],
      time: at('2026-02-01T00:00:00Z'),
      ready: false,
    });
  });

  it('when nothing is outstanding within the advance, then the clock is at its target and ready; never going back', () => {
    const afterIt = [
      work({ id: 'a', sequence: 3, dueAt: at('2026-05-01T00:00:00Z') }),
      work({ id: 'c', sequence: 4, dueAt: null }),
    ];
    expect(nextStep(advancing, afterIt, NOW, never)).toEqual({
      command: [],
      outstanding: [],
      time: advancing.advancingTo,
      ready: true,
    });
    const readyClock = { ...advancing, time: advancing.advancingTo, status: 'ready' as const };
    expect(nextStep(readyClock, afterIt, NOW, never)).toMatchObject({ time: advancing.advancingTo, ready: false });
    const earlier = work({ id: 'd', sequence: 1, dueAt: at('2025-12-01T00:00:00Z'), commandedAt: NOW });
    expect(nextStep(advancing, [earlier], NOW, never).time).toEqual(advancing.time);
  });

  it('when a command changed nothing for a while, then it is sent again, and after the last attempt it no longer holds the clock', () => {
    const due = work({ id: 's', sequence: 1, dueAt: at('2026-01-01T00:00:00Z') });
    expect(nextStep(advancing, [due], NOW, () => ({ count: 1, lastAt: at('2026-11-25T00:00:00Z') }))).toMatchObject({
      command: [due],
      time: advancing.time,
      ready: false,
    });
    const recorded = { ...due, commandedAt: at('2026-11-25T00:00:00Z') };
    expect(nextStep(advancing, [recorded], NOW, never).command).toEqual([recorded]);
    expect(nextStep(advancing, [due], NOW, () => ({ count: 3, lastAt: at('2026-11-25T00:00:00Z') }))).toMatchObject({
      command: [],
      time: advancing.advancingTo,
      ready: true,
    });
    const stale = work({
      id: 'r',
      sequence: 0,
      kind: 'expiry',
      expected: true,
      recordedAt: at('2026-11-25T00:00:00Z'),
    });
    expect(nextStep(advancing, [stale], NOW, never)).toMatchObject({ time: advancing.advancingTo, ready: true });
  });
});
