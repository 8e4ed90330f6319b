import { DateTime, Duration, type DurationLikeObject } from 'luxon';
import {
  formatDateTime,
  isRepresentable,
  parseDateTime,
  parseDuration,
  plusOrNull,
  RANGE_REASON,
  type Parsed,
} from './time-interval';
import { memoized } from './memo';

/**
 * A subscription's time spec (docs/api.md "Subscription timeSpec"):
 * `R[n]/<start>/<period>` or `R[n]/<start>/<end>/<period>`. Luxon does not parse repeating
 * intervals, so this module does, and does the period arithmetic on luxon.
 */
export interface TimeSpec {
  start: DateTime;
  period: Duration;
  /** `n`: at most this many periods; null for no limit. */
  repetitions: number | null;
  /** The subscription ends here; null when only `n` (or nothing) ends it. */
  end: DateTime | null;
  /** `R[n]/<start>/<period>` as the client wrote those parts (docs/api.md). */
  origTimeSpec: string;
}

const MAX_REPETITIONS = 1_000_000;

/** Remembered (memo.ts): a grantor's base shares a handful of specs; the value is frozen. */
export const parseTimeSpec = memoized(4096, (text: string): Parsed<TimeSpec> => {
  const parts = text.split('/');
  if (parts.length !== 3 && parts.length !== 4) {
    return { ok: false, reason: 'must be R[n]/<start>/<period> or R[n]/<start>/<end>/<period>' };
  }
  const [recurrence, startText, ...rest] = parts as [string, string, ...string[]];
  const count = /^R(\d*)$/.exec(recurrence);
  if (!count) return { ok: false, reason: `${recurrence} is not R or R<n>` };
  const repetitions = count[1] === '' ? null : Number(count[1]);
  if (repetitions !== null && (repetitions < 1 || repetitions > MAX_REPETITIONS)) {
    return { ok: false, reason: `the number of periods must be from 1 to ${MAX_REPETITIONS}` };
  }
  const start = parseDateTime(startText);
  if (!start.ok) return start;
  const periodText = rest.at(-1)!;
  const period = parseDuration(periodText);
  if (!period.ok) return period;
  const firstEnd = plusOrNull(start.value, period.value);
  if (!firstEnd) return { ok: false, reason: `its first period ${RANGE_REASON}` };
  if (firstEnd.toMillis() <= start.value.toMillis()) {
    return { ok: false, reason: `the period ${periodText} must be positive` };
  }
  let end: DateTime | null = null;
  if (rest.length === 2) {
    const parsedEnd = parseDateTime(rest[0]!);
    if (!parsedEnd.ok) return parsedEnd;
    if (parsedEnd.value.toMillis() <= start.value.toMillis()) return { ok: false, reason: 'end must be after start' };
    end = parsedEnd.value;
  }
  const value: TimeSpec = {
    start: start.value,
    period: period.value,
    repetitions,
    end,
    origTimeSpec: `${recurrence}/${startText}/${periodText}`,
  };
  // docs/api.md: a count of periods whose last one would end past the range is refused; an
  // unbounded subscription simply has no period past it (`periodExists`).
  if (repetitions !== null && end === null && !periodStartOrNull(value, repetitions))
    return { ok: false, reason: `its last period ${RANGE_REASON}` };
  return { ok: true, value: Object.freeze(value) };
});

/** `period × k` component by component, so that months stay months. */
function times(period: Duration, k: number): Duration {
  const scaled: DurationLikeObject = {};
  for (const [unit, value] of Object.entries(period.toObject()))
    scaled[unit as keyof DurationLikeObject] = (value ?? 0) * k;
  return Duration.fromObject(scaled);
}

/**
 * Start of period k (k = 0 is the first), always computed from the start, never from the
 * previous period: Jan 31 + P1M is Feb 28 (or 29), + P2M is Mar 31. In the start's offset.
 */
export function periodStart(spec: TimeSpec, k: number): DateTime {
  let starts = periodStarts.get(spec);
  if (!starts) periodStarts.set(spec, (starts = memoized(256, (k) => spec.start.plus(times(spec.period, k)))));
  return starts(k);
}

/** Each spec's period starts, remembered while the spec lives (renewal asks for the same few). */
const periodStarts = new WeakMap<TimeSpec, (k: number) => DateTime>();

/** Start of period k, or null when it lies past the representable range (docs/api.md). */
export function periodStartOrNull(spec: TimeSpec, k: number): DateTime | null {
  try {
    const start = periodStart(spec, k);
    return isRepresentable(start) ? start : null;
  } catch {
    return null;
  }
}

/** Whether period k starts before the subscription's end (its `<end>` and its `n`). */
export function periodExists(spec: TimeSpec, k: number): boolean {
  if (k < 0) return false;
  if (spec.repetitions !== null && k >= spec.repetitions) return false;
  const start = periodStartOrNull(spec, k);
  return start !== null && (spec.end === null || start.toMillis() < spec.end.toMillis());
}

/** When the subscription ends: its `<end>`, or the end of its n-th period; null if never. */
export function subscriptionEnd(spec: TimeSpec): DateTime | null {
  const afterLast = spec.repetitions === null ? null : periodStartOrNull(spec, spec.repetitions);
  if (spec.end && afterLast) return spec.end.toMillis() <= afterLast.toMillis() ? spec.end : afterLast;
  return spec.end ?? afterLast;
}

/**
 * The period containing `instant`: the k with periodStart(k) <= instant < periodStart(k+1),
 * or -1 before the start. (Whether period k exists at all is `periodExists`.)
 */
export function periodIndexAt(spec: TimeSpec, instant: DateTime): number {
  const at = instant.toMillis();
  if (at < spec.start.toMillis()) return -1;
  // An estimate from the period's average length, corrected by stepping: periods of
  // calendar units (months, years) vary in length.
  const average = periodStart(spec, 1).toMillis() - spec.start.toMillis();
  let k = average > 0 ? Math.max(0, Math.floor((at - spec.start.toMillis()) / average) - 1) : 0;
  while (k > 0 && periodStart(spec, k).toMillis() > at) k -= 1;
  while (periodStart(spec, k + 1).toMillis() <= at) k += 1;
  return k;
}

/** The first period start strictly after `instant` that exists, or null when none does. */
export function nextPeriodStart(spec: TimeSpec, instant: DateTime): { k: number; start: DateTime } | null {
  const k = periodIndexAt(spec, instant) + 1;
  return periodExists(spec, k) ? { k, start: periodStart(spec, k) } : null;
}

export function formatTimeSpecInstant(value: DateTime): string {
  return formatDateTime(value);
}
