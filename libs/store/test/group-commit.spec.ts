import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../src/index';

// Group commit (libs/store/src/group-commit.ts): what callers hand in while a write is under way
// is written together by the next; with a linger, a batch that is not full waits for more.

/** A group commit whose writes are recorded, each taking `writeMs`. */
function recorded(maxBatch: number, lingerMs?: number, writeMs = 5) {
  const writes: number[][] = [];
  const commit = new GroupCommit<number, string>(
    async (items) => {
      writes.push(items);
      await new Promise((resolve) => setTimeout(resolve, writeMs));
      return items.map((item) => `stored ${item}`);
    },
    maxBatch,
    lingerMs,
  );
  return { commit, writes };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('group commit', () => {
  it('when items come while a write is under way, then the next write takes them together, each caller getting its own outcome', async () => {
    const { commit, writes } = recorded(50);
    const outcomes = await Promise.all([1, 2, 3, 4].map((item) => commit.add(item)));
    expect(outcomes).toEqual(['stored 1', 'stored 2', 'stored 3', 'stored 4']);
    expect(writes).toEqual([[1], [2, 3, 4]]);
  });

  it('when a linger is set, then items handed in within it a few milliseconds apart are written once, together', async () => {
    const { commit, writes } = recorded(50, 200);
    const outcomes: Array<Promise<string>> = [];
    for (const item of [1, 2, 3]) {
      outcomes.push(commit.add(item));
      await pause(10);
    }
    expect(await Promise.all(outcomes)).toEqual(['stored 1', 'stored 2', 'stored 3']);
    expect(writes).toEqual([[1, 2, 3]]);
  });

  it('when a batch fills during its linger, then it is written at once, without waiting out the linger', async () => {
    const { commit, writes } = recorded(3, 60_000);
    const outcomes = await Promise.all([1, 2, 3].map((item) => commit.add(item)));
    expect(outcomes).toHaveLength(3);
    expect(writes).toEqual([[1, 2, 3]]);
  });

  it('when it is flushed during a linger, then what waits is written at once and the flush resolves after it', async () => {
    const { commit, writes } = recorded(50, 60_000);
    const first = commit.add(1);
    const second = commit.add(2);
    await commit.flush();
    expect(writes).toEqual([[1, 2]]);
    expect(await Promise.all([first, second])).toEqual(['stored 1', 'stored 2']);
  });
});
