import { parseDuration, periodStart, plusOrNull, RANGE_REASON, type TimeSpec } from '@rs/time';
import { Duration } from 'luxon';

/**
 * docs/api.md "Time specs": no subscription may cost the platform more than its grantor's
 * own requests. Pure.
 */

/** The most rights one renewal may issue (a renewal that catches up issues every right not yet ended). */
export const MAX_RIGHTS_PER_RENEWAL = 1_000;

/** The floor of SUBSCRIPTION_MIN_PERIOD, and the period a stored subscription is held to when it is renewed. */
export const SHORTEST_PERIOD = Duration.fromObject({ seconds: 1 });

/**
 * Why a subscription's time spec and templates exceed the bounds, naming the field; null when
 * they hold. `spec` parsed (its dates representable); `minPeriod`: SUBSCRIPTION_MIN_PERIOD at
 * creation, SHORTEST_PERIOD for a stored one at renewal (SUBSCRIPTION_MIN_PERIOD may have
 * been lowered since it was created).
 */
export function boundsViolation(
  spec: TimeSpec,
  templates: ReadonlyArray<{ timeSpec?: string | null }>,
  minPeriod: Duration,
): string | null {
  const from = spec.start.toMillis();
  const periodMs = periodStart(spec, 1).toMillis() - from;
  const minPeriodMs = spec.start.plus(minPeriod).toMillis() - from;
  if (!(periodMs >= minPeriodMs)) return `timeSpec: the period must be at least ${minPeriod.toISO()}`;
  let rights = 0;
  for (const [index, template] of templates.entries()) {
    const field = `rightsSpec[${index}].timeSpec`;
    if (!template.timeSpec) {
      rights += 1;
      continue;
    }
    const length = parseDuration(template.timeSpec);
    if (!length.ok) return `${field}: ${length.reason}`;
    const end = plusOrNull(spec.start, length.value);
    if (!end) return `${field}: the rights it makes end ${RANGE_REASON}`;
    if (end.toMillis() <= from) return `${field}: must be a positive duration`;
    // A right lasting n periods means a renewal that catches up may issue n of them.
    rights += Math.ceil((end.toMillis() - from) / periodMs);
  }
  if (rights > MAX_RIGHTS_PER_RENEWAL)
    return `rightsSpec: one renewal could issue ${rights} rights (each template's length divided by the period, summed); at most ${MAX_RIGHTS_PER_RENEWAL}`;
  return null;
}
