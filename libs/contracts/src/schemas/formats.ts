import { z } from 'zod';

/**
 * The formats of list cursors and `If-Match` (docs/api.md "Listing filters", "generation"),
 * shared by the services that parse them and the OpenAPI document that describes them.
 */

/**
 * A C0 or C1 control character (NUL, a line break, DEL…): what printable text never holds. An
 * audit reason with one is refused; a name from a token keeps it escaped (docs/audit.md).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/** A newest-first list's cursor: `<creation time in ms>.<id>` of the last item of the previous page. */
export const KEYSET_CURSOR_PATTERN = '^[0-9]{1,15}\\.[0-9A-Za-z]{1,64}$';

/** `If-Match: "<generation>"` (also weak, `W/"3"`); `*` and lists of tags are not supported. */
export const IF_MATCH_PATTERN = '^\\s*(W/)?"[1-9][0-9]{0,15}"\\s*$';

// The syntax of the time fields (docs/api.md "Time"), for clients and
// fuzzers; libs/time parses them and adds what a pattern cannot say (a valid calendar date,
// an end after its start).
const DATE_TIME =
  '[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,9})?)?(Z|[+-]([01][0-9]|2[0-3])(:?[0-5][0-9])?)';
const DURATION =
  'P(?=[0-9]|T[0-9])([0-9]+Y)?([0-9]+M)?([0-9]+W)?([0-9]+D)?(T(?=[0-9])([0-9]+H)?([0-9]+M)?([0-9]+(\\.[0-9]+)?S)?)?';

/** A right's `timeInterval`: `<start>/<end>`, `<start>/<duration>` or `<duration>/<end>`. */
export const TIME_INTERVAL_PATTERN = `^(${DATE_TIME}/(${DATE_TIME}|${DURATION})|${DURATION}/${DATE_TIME})$`;

/** One date-time with its offset (`after` and `before` of the audit log). */
export const DATE_TIME_PATTERN = `^${DATE_TIME}$`;

/** A list's `active` filter: a date-time with its offset, or `true` or `now` for the current time. */

export const ACTIVE_FILTER_PATTERN = `^(true|now|${DATE_TIME})$`;

/** A subscription's `timeSpec`: `R[n]/<start>/<period>` or `R[n]/<start>/<end>/<period>`. */
export const TIME_SPEC_PATTERN = `^R([1-9][0-9]{0,6})?/${DATE_TIME}(/${DATE_TIME})?/${DURATION}$`;

/**
 * Free text a client sends to be stored (grantorContext, paymentAgreement, descriptions):
 * any characters but NUL, which FerretDB's PostgreSQL cannot store in a string; refused
 * with 400 naming the field rather than failing the write (docs/api.md "Payloads").
 */
export const storableText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((text) => !text.includes('\u0000'), 'must not contain the NUL character (U+0000)');
