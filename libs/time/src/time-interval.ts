import { DateTime, Duration } from 'luxon';
import { memoized } from './memo';

/**
 * A right's interval (docs/api.md "Time"): accepted as `<start>/<end>`,
 * `<start>/<duration>` or `<duration>/<end>`, stored and returned as `<start>/<end>`, each
 * date-time with the offset the client used, to the second.
 */
export interface TimeInterval {
  start: Date;
  end: Date;
  /** `<start>/<end>` as returned by the API. */
  text: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const OFFSET = /(Z|[+-]\d{2}(:?\d{2})?)$/;

/** The instants the platform represents (docs/api.md "Time specs"): years 0001 to 9999, in UTC. */
export const EARLIEST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
export const LATEST_INSTANT = Date.parse('9999-12-31T23:59:59Z');
export const RANGE_REASON = 'is outside the representable range (years 0001 to 9999)';

/** Whether a date-time is valid and within years 0001 to 9999 (docs/api.md). */
export function isRepresentable(value: DateTime): boolean {
  const ms = value.isValid ? value.toMillis() : NaN;
  return Number.isFinite(ms) && ms >= EARLIEST_INSTANT && ms <= LATEST_INSTANT;
}

/** `start + duration`, or null when luxon cannot represent it (a huge duration throws or is invalid). */
export function plusOrNull(start: DateTime, duration: Duration): DateTime | null {
  try {
    const end = start.plus(duration);
    return isRepresentable(end) ? end : null;
  } catch {
    return null;
  }
}

/** `instant` plus the ISO 8601 duration `text` (calendar units in UTC), or null when it is not one or out of range. */
export function instantAfter(instant: Date, text: string): Date | null {
  const duration = parseDuration(text);
  if (!duration.ok) return null;
  return plusOrNull(DateTime.fromJSDate(instant, { zone: 'utc' }), duration.value)?.toJSDate() ?? null;
}

/** An ISO 8601 date-time that carries its offset; luxon keeps that offset for formatting. */
export function parseDateTime(text: string): Parsed<DateTime> {
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text)) return { ok: false, reason: `${text} is not an ISO 8601 date-time` };
  if (!OFFSET.test(text)) return { ok: false, reason: `${text} has no offset (e.g. Z or +01:00)` };
  const value = DateTime.fromISO(text, { setZone: true });
  if (!value.isValid)
    return {
      ok: false,
      reason: `${text} is not a valid date-time (${value.invalidExplanation ?? value.invalidReason})`,
    };
  if (!isRepresentable(value)) return { ok: false, reason: `${text} ${RANGE_REASON}` };
  return { ok: true, value };
}

/** At least one component; `P` or `PT` alone is not a duration. */
const ISO_DURATION = /^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;

/** An ISO 8601 duration with at least one component (luxon alone accepts `P`). */
export const parseDuration = memoized(1024, (text: string): Parsed<Duration> => {
  if (!ISO_DURATION.test(text)) return { ok: false, reason: `${text} is not an ISO 8601 duration` };
  const value = Duration.fromISO(text);
  if (!value.isValid) return { ok: false, reason: `${text} is not an ISO 8601 duration` };
  return { ok: true, value };
});

const formatted = new WeakMap<DateTime, string>();

/**
 * `2026-01-31T00:00:00+01:00`: seconds precision, the offset kept (UTC as Z). Remembered per
 * value for as long as the value lives: a remembered period start is formatted once.
 */
export function formatDateTime(value: DateTime): string {
  let text = formatted.get(value);
  if (text === undefined) {
    text = value.startOf('second').toISO({ suppressMilliseconds: true, includeOffset: true })!;
    formatted.set(value, text);
  }
  return text;
}

/** The instants as numbers, so that a remembered interval hands out fresh (mutable) Dates. */
interface IntervalInstants {
  start: number;
  end: number;
  text: string;
}

export function parseTimeInterval(text: string): Parsed<TimeInterval> {
  const parsed = parseIntervalInstants(text);
  if (!parsed.ok) return parsed;
  const { start, end, text: canonical } = parsed.value;
  return { ok: true, value: { start: new Date(start), end: new Date(end), text: canonical } };
}

const parseIntervalInstants = memoized(4096, (text: string): Parsed<IntervalInstants> => {
  const parts = text.split('/');
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    return { ok: false, reason: 'must be <start>/<end>, <start>/<duration> or <duration>/<end>' };
  }
  const [first, second] = parts as [string, string];
  let start: DateTime;
  let end: DateTime;
  if (first.startsWith('P')) {
    const duration = parseDuration(first);
    const until = parseDateTime(second);
    if (!duration.ok) return duration;
    if (!until.ok) return until;
    end = until.value;
    const from = plusOrNull(end, duration.value.negate());
    if (!from) return { ok: false, reason: `its start ${RANGE_REASON}` };
    start = from;
  } else {
    const from = parseDateTime(first);
    if (!from.ok) return from;
    start = from.value;
    const until = second.startsWith('P') ? endAfter(start, second) : parseDateTime(second);
    if (!until.ok) return until;
    end = until.value;
  }
  // Seconds precision everywhere: the stored instants are exactly what the text says.
  start = start.startOf('second');
  end = end.startOf('second');
  if (!start.isValid || !end.isValid) return { ok: false, reason: 'is out of range' };
  if (end.toMillis() <= start.toMillis()) return { ok: false, reason: 'end must be after start' };
  return {
    ok: true,
    value: { start: start.toMillis(), end: end.toMillis(), text: `${formatDateTime(start)}/${formatDateTime(end)}` },
  };
});

/** `start` plus the ISO 8601 duration `text`, or why there is none. */
function endAfter(start: DateTime, text: string): Parsed<DateTime> {
  const duration = parseDuration(text);
  if (!duration.ok) return duration;
  const until = plusOrNull(start, duration.value);
  return until ? { ok: true, value: until } : { ok: false, reason: `its end ${RANGE_REASON}` };
}
