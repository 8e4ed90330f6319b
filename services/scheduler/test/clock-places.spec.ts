import { describe, expect, it } from 'vitest';
import { confirmPlaces, NO_PLACES, PLACE_LAPSES_AFTER_MS, takePlaces } from '../src/domain/clock-places';

// TEST_CLOCK_MAX_OBJECTS (docs/api.md "Test clocks"): a place is taken when a creation is
// announced, confirmed when the object's creation is seen, and lapses when it never is.
const NOW = new Date('2026-11-29T12:00:00Z');
const later = (ms: number) => new Date(NOW.getTime() + ms);

describe('the places of a test clock', () => {
  it('when creations are announced on a clock holding at most 2, then two take a place and the third none', () => {
    const { next, granted } = takePlaces(NO_PLACES, ['a', 'b', 'c'], 2, NOW);
    expect(granted).toEqual([true, true, false]);
    expect(next!.pending.map(({ id }) => id)).toEqual(['a', 'b']);
  });

  it('when an announced creation is never seen, then its place lapses and another creation takes it', () => {
    const full = takePlaces(NO_PLACES, ['failed', 'made'], 2, NOW).next!;
    const seen = confirmPlaces(full, ['made'])!;
    expect(takePlaces(seen, ['next'], 2, later(PLACE_LAPSES_AFTER_MS - 1_000)).granted).toEqual([false]);
    const { next, granted } = takePlaces(seen, ['next'], 2, later(PLACE_LAPSES_AFTER_MS));
    expect(granted).toEqual([true]);
    expect(next).toEqual({ confirmed: 1, pending: [{ id: 'next', at: later(PLACE_LAPSES_AFTER_MS) }] });
  });

  it('when a confirmed object is old, then its place is still held', () => {
    const seen = confirmPlaces(takePlaces(NO_PLACES, ['a', 'b'], 2, NOW).next!, ['a', 'b'])!;
    expect(seen).toEqual({ confirmed: 2, pending: [] });
    // A full clock's refusal changes nothing: nothing is written for it.
    expect(takePlaces(seen, ['c'], 2, later(10 * PLACE_LAPSES_AFTER_MS))).toEqual({ next: null, granted: [false] });
  });

  it('when a creation is announced again, then it keeps its place and takes no second one', () => {
    const once = takePlaces(NO_PLACES, ['a'], 2, NOW).next!;
    expect(takePlaces(once, ['a', 'a'], 2, later(1_000))).toEqual({ next: null, granted: [true, true] });
  });

  it('when objects no place was taken for are seen (rights a renewal issued), then nothing changes', () => {
    const once = takePlaces(NO_PLACES, ['a'], 2, NOW).next!;
    expect(confirmPlaces(once, ['renewal-right'])).toBeNull();
  });
});
