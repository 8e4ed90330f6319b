import { describe, expect, it } from 'vitest';
import { roomOf } from '../src/domain/clock-shares';

// docs/decisions/0065: the clock lane's items, shared equally by the grantors that have some in hand.
describe("a grantor's room in the clock lane", () => {
  it('when a grantor is alone in the lane, then it has the whole lane less what it has in hand', () => {
    expect(roomOf(1000, new Map(), 'L')).toBe(1000);
    expect(roomOf(1000, new Map([['L', 400]]), 'L')).toBe(600);
    expect(roomOf(1000, new Map([['L', 1000]]), 'L')).toBe(0);
  });

  it('when another grantor has items in hand, then each has an equal part, and one over its part gets none', () => {
    const inHand = new Map([['L', 1000]]);
    expect(roomOf(1000, inHand, 'S')).toBe(500);
    inHand.set('S', 2);
    expect(roomOf(1000, inHand, 'L')).toBe(0);
    expect(roomOf(1000, inHand, 'S')).toBe(498);
    expect(
      roomOf(
        999,
        new Map([
          ['A', 1],
          ['B', 1],
        ]),
        'C',
      ),
    ).toBe(333);
  });

  it('when a grantor has nothing in hand any more, then it no longer takes a part', () => {
    expect(roomOf(1000, new Map([['S', 0]]), 'L')).toBe(1000);
  });

  it('when the lane is smaller than the grantors sharing it, then each still has room for one', () => {
    expect(
      roomOf(
        2,
        new Map([
          ['A', 0],
          ['B', 1],
          ['C', 1],
        ]),
        'A',
      ),
    ).toBe(1);
  });
});
