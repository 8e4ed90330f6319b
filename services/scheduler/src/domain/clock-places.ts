/**
 * The places of a test clock (TEST_CLOCK_MAX_OBJECTS, docs/api.md "Test clocks"): one for each
 * subscription or right created on it through the API. A place is taken when the service about
 * to create the object announces it, before the object exists; it is **confirmed** when the
 * object's creation event reaches the scheduler. A place never confirmed within
 * `PLACE_LAPSES_AFTER_MS` lapses (docs/decisions/0063): the creation failed after its announcement (an answer 503, a
 * crash), and it would otherwise hold the place for the life of the clock.
 */
export interface ClockPlaces {
  /** Places of objects whose creation the scheduler has seen. */
  confirmed: number;
  /** Places of announced objects not seen yet, by object id, with when each was taken. */
  pending: ReadonlyArray<{ id: string; at: Date }>;
}

/**
 * How long an announced creation's place waits for its object's event. Generous: events of
 * objects on clocks wait behind real time's (docs/decisions/0061), and an object seen after
 * its place lapsed goes uncounted.
 */
export const PLACE_LAPSES_AFTER_MS = 10 * 60_000;

/** No places taken yet. */
export const NO_PLACES: ClockPlaces = { confirmed: 0, pending: [] };

/**
 * Places for the objects `ids` announced at `now` on a clock holding at most `max`: whether
 * each got one (an object announced again keeps the place it has), and the places after, null
 * when they are unchanged (none taken, none lapsed). Pure.
 */
export function takePlaces(
  places: ClockPlaces,
  ids: readonly string[],
  max: number,
  now: Date,
): { next: ClockPlaces | null; granted: boolean[] } {
  const live = places.pending.filter(({ at }) => now.getTime() - at.getTime() < PLACE_LAPSES_AFTER_MS);
  const pending = [...live];
  const held = new Set(pending.map(({ id }) => id));
  const granted = ids.map((id) => {
    if (held.has(id)) return true;
    if (places.confirmed + pending.length >= max) return false;
    pending.push({ id, at: now });
    held.add(id);
    return true;
  });
  // Changed when a place lapsed or one was taken.
  const changed = live.length !== places.pending.length || pending.length !== live.length;
  return { next: changed ? { confirmed: places.confirmed, pending } : null, granted };
}

/** The places once the objects `ids` were seen created: null when none of them held a pending place. Pure. */
export function confirmPlaces(places: ClockPlaces, ids: readonly string[]): ClockPlaces | null {
  const seen = new Set(ids);
  const pending = places.pending.filter(({ id }) => !seen.has(id));
  if (pending.length === places.pending.length) return null;
  return { confirmed: places.confirmed + places.pending.length - pending.length, pending };
}
