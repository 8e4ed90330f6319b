/**
 * docs/api.md "Payloads": what a JSON body holds comes back exactly as sent, or is refused (400
 * naming the field). JavaScript, and the database after it, hold numbers as IEEE 754 doubles and
 * text as well-formed UTF-16: a number that is not finite, a `-0`, a number with more significant
 * digits than a double keeps (`12345678901234567890`), or text with a lone surrogate would come
 * back as something else (`null`, `0`, `12345678901234567000`, U+FFFD), so each is refused.
 *
 * `inexactField` reads a body's text again, when it holds anything that might not be kept, with
 * `exactReviver`: it reads each number's source text (JSON.parse source text access) and marks
 * what cannot be kept; `firstInexact` then names the first field holding a mark. Pure.
 */

/**
 * What might not come back as sent: a `\u` escape of a surrogate, a run of 16 digits or more
 * (a double keeps 15 to 17), an exponent, a `-0`. Most bodies hold none and are not read again.
 */
const SUSPECT = /\\u[dD][89a-fA-F]|\d{16}|\d[eE][+-]?\d|-0(?![.\d])/;

/**
 * The first field of a JSON body (its text, already parsed once and its nesting checked) that
 * cannot come back exactly as sent, with why; null when everything can.
 */
export function inexactField(text: Buffer | string | undefined): string | null {
  if (text === undefined) return null;
  const body = typeof text === 'string' ? text : text.toString('utf8');
  if (!SUSPECT.test(body)) return null;
  return firstInexact(JSON.parse(body, exactReviver));
}

/** A value that cannot be kept as sent, in place of it until the body is refused. */
class Inexact {
  constructor(readonly reason: string) {}
}

/** A high surrogate not followed by a low one, or a low one not after a high one: not text UTF-8 can hold. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The reviver of `JSON.parse` that marks what cannot be kept (see above). */
function exactReviver(key: string, value: unknown, context?: { source?: string }): unknown {
  if (LONE_SURROGATE.test(key)) return new Inexact(`the name ${JSON.stringify(key)} holds a lone surrogate`);
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? new Inexact('holds a lone surrogate') : value;
  if (typeof value !== 'number' || context?.source === undefined) return value;
  const source = context.source;
  if (!Number.isFinite(value)) return new Inexact(`${abridged(source)} is beyond what a number can hold`);
  if (Object.is(value, -0)) return new Inexact('-0 cannot be kept apart from 0');
  // The common case: written as JavaScript writes it.
  if (String(value) === source) return value;
  if (!sameDecimal(source, String(value)))
    return new Inexact(`${abridged(source)} has more significant digits than a number keeps (${String(value)})`);
  return value;
}

/**
 * The path of the first value of `body` that cannot be kept (`payload.items.3`), with why; null
 * when there is none. Iterative, like the nesting check, so no depth of input exhausts the stack.
 */
function firstInexact(body: unknown): string | null {
  const pending: Array<[unknown, string]> = [[body, '']];
  while (pending.length > 0) {
    const [node, path] = pending.pop()!;
    if (node instanceof Inexact) return `${path || 'body'}: ${node.reason}`;
    if (node === null || typeof node !== 'object') continue;
    const entries = Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      pending.push([child, path ? `${path}.${key}` : key]);
    }
  }
  return null;
}

/** Whether two JSON number texts denote the same decimal (`1.0` and `1`, `1e2` and `100`). */
function sameDecimal(a: string, b: string): boolean {
  const x = decimalOf(a);
  const y = decimalOf(b);
  return x.negative === y.negative && x.digits === y.digits && (x.digits === '' || x.exponent === y.exponent);
}

/** A number's text as sign, significant digits (no leading or trailing zeros) and the exponent of its last digit. */
function decimalOf(text: string): { negative: boolean; digits: string; exponent: number } {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return { negative: false, digits: text, exponent: 0 };
  const [, sign, whole = '', fraction = '', power = '0'] = match;
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  let exponent = Number(power) - fraction.length;
  const trailing = /0+$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  return { negative: sign === '-', digits, exponent };
}

/** A number's text short enough for a message (a 5,001-digit integer is not repeated whole). */
const abridged = (text: string) => (text.length > 40 ? `${text.slice(0, 20)}…(${text.length} characters)` : text);
