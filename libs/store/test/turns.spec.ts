import { describe, expect, it } from 'vitest';
import { CallerLeft, OwnTurnAwaited, RACE_LOST, untilStored } from '../src/index';

// The turns of read-decide-write loops in one process (docs/decisions/0074), without a database:
// an attempt here stands for a read, a decision and a compare-and-set.
const done = <T>(value: T) => untilStored('right R1', async () => value);

describe('untilStored turns', () => {
  it('when an attempt starts a loop of its own subject, then that loop is refused at once and the subject stays free', async () => {
    const nested = untilStored('right R1', () => done('inner'));
    await expect(nested).rejects.toBeInstanceOf(OwnTurnAwaited);
    await expect(nested).rejects.toThrow('a change of right R1 was started within a change of right R1');
    // The outer turn ended with its failure: the next change of R1 runs.
    expect(await done('next')).toBe('next');
  });

  it('when an attempt starts a loop of another subject, then both run, and deeper nesting is still caught', async () => {
    expect(await untilStored('subscription S1', () => done('right within subscription'))).toBe(
      'right within subscription',
    );
    const deep = untilStored('right R1', () => untilStored('subscription S1', () => done('again')));
    await expect(deep).rejects.toBeInstanceOf(OwnTurnAwaited);
  });

  it('when work an attempt left behind starts a loop of the subject after the turn ended, then it waits its turn and runs', async () => {
    let later: Promise<string> | undefined;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await untilStored('right R1', async () => {
      later = released.then(() => done('later'));
      return 'first';
    });
    release();
    expect(await later).toBe('later');
  });

  it('when the caller leaves while its change waits its turn, then the change is never begun and the turns after it run', async () => {
    let held!: () => void;
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const busy = untilStored('right R1', () => {
      held();
      return new Promise<string>((resolve) => (release = () => resolve('busy')));
    });
    await holding;
    const caller = new AbortController();
    let begun = 0;
    const waiting = untilStored('right R1', async () => ++begun, caller.signal);
    const next = done('next');
    caller.abort();
    release();
    await expect(waiting).rejects.toBeInstanceOf(CallerLeft);
    await expect(waiting).rejects.toMatchObject({ code: 'unavailable', retryAfterSeconds: 1 });
    expect(begun).toBe(0);
    expect(await busy).toBe('busy');
    expect(await next).toBe('next');
  });

  it('when the caller leaves after its change began, then the change is carried through, lost races included', async () => {
    const caller = new AbortController();
    let attempts = 0;
    const carried = await untilStored(
      'right R1',
      async () => {
        attempts += 1;
        caller.abort();
        return attempts < 3 ? RACE_LOST : 'stored';
      },
      caller.signal,
    );
    expect(carried).toBe('stored');
    expect(attempts).toBe(3);
  });
});
