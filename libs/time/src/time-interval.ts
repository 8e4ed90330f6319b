import { DateTime, Duration } from 'luxon';

/**
 * A right's interval (spec 2.4, DESIGN.md 3 "Time"): accepted as `<start>/<end>`,
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
  return { ok: true, value };
}

/** At least one component; `P` or `PT` alone is not a duration. */
const ISO_DURATION = /^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;

/** An ISO 8601 duration with at least one component (luxon alone accepts `P`). */
export function parseDuration(text: string): Parsed<Duration> {
  if (!ISO_DURATION.test(text)) return { ok: false, reason: `${text} is not an ISO 8601 duration` };
  const value = Duration.fromISO(text);
  if (!value.isValid) return { ok: false, reason: `${text} is not an ISO 8601 duration` };
  return { ok: true, value };
}

/** `2026-01-31T00:00:00+01:00`: seconds precision, the offset kept (UTC as Z). */
export function formatDateTime(value: DateTime): string {
  return value.startOf('second').toISO({ suppressMilliseconds: true, includeOffset: true })!;
}

export function parseTimeInterval(text: string): Parsed<TimeInterval> {
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
    start = end.minus(duration.value);
  } else {
    const from = parseDateTime(first);
    if (!from.ok) return from;
    start = from.value;
    if (second.startsWith('P')) {
      const duration = parseDuration(second);
      if (!duration.ok) return duration;
      end = start.plus(duration.value);
    } else {
      const until = parseDateTime(second);
      if (!until.ok) return until;
      end = until.value;
    }
  }
  // Seconds precision everywhere: the stored instants are exactly what the text says.
  start = start.startOf('second');
  end = end.startOf('second');
  if (!start.isValid || !end.isValid) return { ok: false, reason: 'is out of range' };
  if (end.toMillis() <= start.toMillis()) return { ok: false, reason: 'end must be after start' };
  return {
    ok: true,
    value: { start: start.toJSDate(), end: end.toJSDate(), text: `${formatDateTime(start)}/${formatDateTime(end)}` },
  };
}
