import { describe, expect, it } from 'vitest';
import { landedLate, SecondSweeper, secondOf, type SecondSweeperOptions } from '../src/index';

const T0 = 1_800_000_000; // a whole second
const at = (second: number, ms = 0) => new Date(second * 1000 + ms);

/** Due items in memory by second, a cursor in memory, and a record of what was handed on. */
function world(options: Partial<SecondSweeperOptions<string>> = {}) {
  const due = new Map<number, string[]>();
  const handed: Array<[number, string[]]> = [];
  const saves: number[] = [];
  const reads: number[] = [];
  const finished: number[] = [];
  let saved: number | null = null;
  let failAt: number | undefined;
  const sweeper = new SecondSweeper<string>({
    read: async (second) => {
      reads.push(second);
      return due.get(second) ?? [];
    },
    handle: async (items, second) => {
      if (second === failAt) throw new Error('broker down');
      handed.push([second, items]);
    },
    finish: async (second) => {
      finished.push(second);
    },
    cursor: {
      read: async () => saved,
      save: async (second) => {
        saved = second;
        saves.push(second);
      },
    },
    start: { firstLookBackS: 5 },
    perSweep: { seconds: 600, items: 1_000 },
    saveEveryMs: 10_000,
    ...options,
  });
  return {
    sweeper,
    due,
    handed,
    saves,
    reads,
    finished,
    get saved() {
      return saved;
    },
    set saved(second: number | null) {
      saved = second;
    },
    failAt: (second: number | undefined) => {
      failAt = second;
    },
  };
}

describe('SecondSweeper', () => {
  it('when seconds pass, then each is read once, in order, when it has passed and `lagS` more, and those holding items are handed on and saved', async () => {
    const w = world({ lagS: 1 });
    w.saved = T0;
    w.due.set(T0 + 1, ['a']).set(T0 + 3, ['b', 'c']);
    await w.sweeper.sweep(at(T0 + 3, 999)); // T0+2 has passed; a lag of 1 stops at T0+1
    expect(w.reads).toEqual([T0 + 1]);
    await w.sweeper.sweep(at(T0 + 5, 10));
    expect(w.reads).toEqual([T0 + 1, T0 + 2, T0 + 3]);
    expect(w.handed).toEqual([
      [T0 + 1, ['a']],
      [T0 + 3, ['b', 'c']],
    ]);
    expect(w.saves).toEqual([T0 + 1, T0 + 3]);
    await w.sweeper.sweep(at(T0 + 5, 500));
    expect(w.reads).toHaveLength(3);
  });

  it('when it starts for the first time, then it looks `firstLookBackS` back; when it starts again, then from the saved second less `restartMarginS`', async () => {
    const first = world({ start: { firstLookBackS: 5 } });
    await first.sweeper.sweep(at(T0, 100));
    expect(first.reads).toEqual([T0 - 4, T0 - 3, T0 - 2, T0 - 1]);

    const again = world({ start: { firstLookBackS: 5, restartMarginS: 2 } });
    again.saved = T0 - 10;
    await again.sweeper.sweep(at(T0 - 5));
    expect(again.reads[0]).toBe(T0 - 11);
    expect(again.sweeper.swept).toBe(T0 - 6);
  });

  it('when handing a second on fails, then the sweep ends there, nothing past it is saved, and the next sweep reads it again', async () => {
    const w = world();
    w.saved = T0;
    w.due
      .set(T0 + 1, ['a'])
      .set(T0 + 2, ['b'])
      .set(T0 + 3, ['c']);
    w.failAt(T0 + 2);
    await expect(w.sweeper.sweep(at(T0 + 4))).rejects.toThrow('broker down');
    expect(w.saved).toBe(T0 + 1);
    w.failAt(undefined);
    await w.sweeper.sweep(at(T0 + 4));
    expect(w.handed.map(([second]) => second)).toEqual([T0 + 1, T0 + 2, T0 + 3]);
    expect(w.saved).toBe(T0 + 3);
  });

  it('when it catches up, then a sweep reads at most `maxSecondsPerSweep` seconds and stops after `maxItemsPerSweep` items, saving where it stopped', async () => {
    const w = world({ perSweep: { seconds: 10, items: 3 } });
    w.saved = T0 - 100;
    await w.sweeper.sweep(at(T0));
    expect(w.reads).toHaveLength(10);
    expect(w.saved).toBe(T0 - 90); // behind: saved so that another owner goes on from here
    for (let s = T0 - 89; s <= T0 - 80; s++) w.due.set(s, ['x', 'y']);
    await w.sweeper.sweep(at(T0));
    expect(w.handed).toHaveLength(2); // 4 items: past the bound after the second second
    expect(w.saved).toBe(T0 - 88);
  });

  it('when a second look is asked for, then each second is read again `afterS` later, and what was written late is handed on and reported', async () => {
    const late: Array<[number, number]> = [];
    const w = world({ secondLook: { afterS: 3, onLate: (second, items) => late.push([second, items]) } });
    w.saved = T0;
    await w.sweeper.sweep(at(T0 + 2)); // reads T0+1
    w.due.set(T0 + 1, ['written-late']);
    await w.sweeper.sweep(at(T0 + 3)); // reads T0+2; T0+1 not yet looked at again
    expect(w.handed).toEqual([]);
    await w.sweeper.sweep(at(T0 + 5)); // swept to T0+4: T0+1 is 3 s behind
    expect(w.handed).toEqual([[T0 + 1, ['written-late']]]);
    expect(late).toEqual([[T0 + 1, 1]]);
  });

  it('when handed-on items are not safe yet, then the position saved stays before them', async () => {
    let waiting = T0 + 1;
    const w = world({ safePosition: (swept) => Math.min(swept, waiting - 1) });
    w.saved = T0;
    w.due.set(T0 + 1, ['a']).set(T0 + 2, ['b']);
    await w.sweeper.sweep(at(T0 + 3));
    expect(w.saves).toEqual([T0, T0]);
    waiting = Infinity;
    w.due.set(T0 + 3, ['c']);
    await w.sweeper.sweep(at(T0 + 4));
    expect(w.saved).toBe(T0 + 3);
  });

  it('when stopped during a sweep, then it ends after the second it is on, saves it, and sweeps no more', async () => {
    const w = world();
    w.saved = T0;
    w.due.set(T0 + 2, ['a']);
    const sweeper = w.sweeper;
    const reads = w.reads;
    w.due.set(T0 + 1, []);
    const original = w.due.get.bind(w.due);
    w.due.get = (second: number) => {
      if (second === T0 + 1) sweeper.stop();
      return original(second);
    };
    await sweeper.sweep(at(T0 + 10));
    expect(reads).toEqual([T0 + 1]);
    expect(w.saved).toBe(T0 + 1);
    await sweeper.sweep(at(T0 + 20));
    expect(reads).toEqual([T0 + 1]);
  });
});

describe('SecondSweeper, handing on early', () => {
  /** Items named `<ms into their second>`: due then. */
  const early = { dueAt: (item: string) => Number(item.split('@')[1]) };
  const item = (name: string, second: number, ms: number) => `${name}@${second * 1000 + ms}`;

  it('when a second begins, then it is read once, its items handed on as they fall due, and it is finished and saved only once it has passed', async () => {
    const w = world({ early });
    w.saved = T0;
    const [a, b, c] = [item('a', T0 + 1, 0), item('b', T0 + 1, 0), item('c', T0 + 1, 600)];
    w.due.set(T0 + 1, [a, b, c]);
    await w.sweeper.sweep(at(T0 + 1, 50)); // the second under way: what is due at its start goes at once
    expect(w.handed).toEqual([[T0 + 1, [a, b]]]);
    await w.sweeper.sweep(at(T0 + 1, 250)); // nothing more due yet, nothing read again
    expect(w.handed).toHaveLength(1);
    await w.sweeper.sweep(at(T0 + 1, 650));
    expect(w.handed).toEqual([
      [T0 + 1, [a, b]],
      [T0 + 1, [c]],
    ]);
    expect(w.reads).toEqual([T0 + 1]);
    expect(w.finished).toEqual([]);
    expect(w.saved).toBe(T0);
    await w.sweeper.sweep(at(T0 + 2, 10)); // passed: finished and saved, nothing handed twice
    expect(w.handed).toHaveLength(2);
    expect(w.finished).toEqual([T0 + 1]);
    expect(w.saved).toBe(T0 + 1);
    expect(w.reads).toEqual([T0 + 1, T0 + 2]); // and the next second is read as it begins
  });

  it('when handing on early fails, then the same items go at the next sweep; when a sweeper stops mid-second, then its successor reads the second again', async () => {
    const w = world({ early });
    w.saved = T0;
    const a = item('a', T0 + 1, 0);
    w.due.set(T0 + 1, [a]);
    w.failAt(T0 + 1);
    await expect(w.sweeper.sweep(at(T0 + 1, 10))).rejects.toThrow('broker down');
    w.failAt(undefined);
    await w.sweeper.sweep(at(T0 + 1, 210));
    expect(w.handed).toEqual([[T0 + 1, [a]]]);

    const successor = world({ early });
    successor.saved = w.saved; // nothing saved past the second under way
    successor.due.set(T0 + 1, [a]);
    await successor.sweeper.sweep(at(T0 + 1, 410));
    expect(successor.handed).toEqual([[T0 + 1, [a]]]); // handed again: commands are idempotent
  });

  it('when a second held nothing, then it is not finished; when the sweeper is behind, then it reads no second early', async () => {
    const w = world({ early, perSweep: { seconds: 2, items: 1_000 } });
    w.saved = T0;
    w.due.set(T0 + 5, [item('e', T0 + 5, 0)]);
    await w.sweeper.sweep(at(T0 + 5, 10)); // behind: T0+1, T0+2 only
    expect(w.reads).toEqual([T0 + 1, T0 + 2]);
    await w.sweeper.sweep(at(T0 + 5, 20));
    await w.sweeper.sweep(at(T0 + 5, 30));
    expect(w.reads).toEqual([T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5]);
    expect(w.handed).toEqual([[T0 + 5, [item('e', T0 + 5, 0)]]]);
    expect(w.finished).toEqual([]);
    expect(() => world({ early, lagS: 1 })).toThrow('lagS 0');
  });
});

describe('SecondSweeper, reading ahead', () => {
  const early = { dueAt: (item: string) => Number(item.split('@')[1]), aheadS: 1 };
  const item = (name: string, second: number, ms: number) => `${name}@${second * 1000 + ms}`;

  it('when a second is about to begin, then it is read a second ahead and its burst goes at the first sweep in it, nothing read twice', async () => {
    const w = world({ early });
    w.saved = T0;
    const burst = [item('a', T0 + 2, 0), item('b', T0 + 2, 0)];
    w.due.set(T0 + 2, burst);
    await w.sweeper.sweep(at(T0 + 1, 50)); // T0+1 under way, T0+2 read ahead
    expect(w.reads).toEqual([T0 + 1, T0 + 2]);
    expect(w.handed).toEqual([]);
    w.due.set(T0 + 2, [...burst, item('late', T0 + 2, 0)]); // written after the read: the writer's to hand on
    await w.sweeper.sweep(at(T0 + 2, 10));
    expect(w.handed).toEqual([[T0 + 2, burst]]);
    expect(w.reads).toEqual([T0 + 1, T0 + 2, T0 + 3]);
    await w.sweeper.sweep(at(T0 + 3, 10)); // passed: finished, saved, its items not handed again
    expect(w.handed).toHaveLength(1);
    expect(w.finished).toEqual([T0 + 2]);
    expect(w.saved).toBe(T0 + 2);
  });

  it('when the writer and a sweeper reading a second ahead agree on the late-write rule, then a write is late from a second and the skew before its second begins', () => {
    const timing = { lagS: -1 - early.aheadS, clockSkewMs: 1_000 };
    expect(landedLate(T0 + 2, at(T0, -1), timing)).toBe(false);
    expect(landedLate(T0 + 2, at(T0), timing)).toBe(true);
  });
});

describe('the late-write rule', () => {
  it('when a write lands before any sweeper can have read its second, then it is not late; from then on it is', () => {
    const timing = { lagS: 1, clockSkewMs: 1_000 };
    // A sweeper with lag 1 reads second s once s + 1 has passed, at (s + 2) s on its clock,
    // which may run a second ahead of the writer's.
    expect(landedLate(T0, at(T0 + 1, -1), timing)).toBe(false);
    expect(landedLate(T0, at(T0 + 1), timing)).toBe(true);
    expect(landedLate(T0, at(T0 + 60), timing)).toBe(true);
    expect(landedLate(T0, at(T0, 999), { lagS: 0, clockSkewMs: 0 })).toBe(false);
    expect(landedLate(T0, at(T0 + 1), { lagS: 0, clockSkewMs: 0 })).toBe(true);
    expect(secondOf(at(T0, 999))).toBe(T0);
  });
});
