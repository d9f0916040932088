/**
 * Go's duration forms, as the upstream Go implementation reads them in its config: a string in
 * `time.ParseDuration`'s grammar (`"10s"`, `"1m30s"`, `"1.5h"`, `"-2ms"`, `"0"`) or a JSON number
 * of nanoseconds. Both are read to whole nanoseconds, exactly as Go does, including its overflow
 * limit (a duration is an int64 of nanoseconds).
 */

const NANOS_PER_UNIT: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  '\u00b5s': 1_000n, // micro sign
  '\u03bcs': 1_000n, // Greek small letter mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const MAX_NANOS = (1n << 63n) - 1n;
const INT64_LIMIT = 1n << 63n;
const DIGITS = /^[0-9]*/;

/** Raised for a text that is not a Go duration; the message is Go's. */
export class GoDurationError extends Error {
  override readonly name = 'GoDurationError';
}

function isDigitOrDot(c: string | undefined): boolean {
  return c === '.' || (c !== undefined && c >= '0' && c <= '9');
}

/**
 * Parses a duration string as Go's `time.ParseDuration` does and returns nanoseconds.
 *
 * @throws GoDurationError with Go's message (`time: invalid duration "x"`, `time: missing unit …`,
 * `time: unknown unit …`) for anything Go refuses.
 */
export function parseGoDuration(text: string): bigint {
  const quoted = JSON.stringify(text);
  const invalid = (): GoDurationError => new GoDurationError(`time: invalid duration ${quoted}`);
  let s = text;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') throw invalid();

  let total = 0n;
  while (s !== '') {
    if (!isDigitOrDot(s[0])) throw invalid();
    const whole = DIGITS.exec(s)?.[0] ?? '';
    s = s.slice(whole.length);
    let fraction = '';
    if (s.startsWith('.')) {
      s = s.slice(1);
      fraction = DIGITS.exec(s)?.[0] ?? '';
      s = s.slice(fraction.length);
    }
    if (whole === '' && fraction === '') throw invalid();
    let unitEnd = 0;
    while (unitEnd < s.length && !isDigitOrDot(s[unitEnd])) unitEnd++;
    if (unitEnd === 0) throw new GoDurationError(`time: missing unit in duration ${quoted}`);
    const unitName = s.slice(0, unitEnd);
    s = s.slice(unitEnd);
    const unit = NANOS_PER_UNIT[unitName];
    if (unit === undefined) {
      throw new GoDurationError(`time: unknown unit ${JSON.stringify(unitName)} in duration ${quoted}`);
    }
    const value = whole === '' ? 0n : BigInt(whole);
    if (value > INT64_LIMIT / unit) throw invalid();
    let nanos = value * unit;
    if (fraction !== '') {
      // Go keeps at most the fraction digits that fit an int64 and scales in float64.
      let f = 0n;
      let scale = 1;
      for (const digit of fraction) {
        const next = f * 10n + BigInt(digit);
        if (f > MAX_NANOS / 10n || next > INT64_LIMIT) break;
        f = next;
        scale *= 10;
      }
      nanos += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
      if (nanos > INT64_LIMIT) throw invalid();
    }
    total += nanos;
    if (total > INT64_LIMIT) throw invalid();
  }
  if (negative) return -total;
  if (total > MAX_NANOS) throw invalid();
  return total;
}

/**
 * Reads a JSON duration value as upstream's `Duration.UnmarshalJSON` does: a number is taken as
 * nanoseconds (truncated toward zero), a string is parsed by {@link parseGoDuration}.
 *
 * @throws GoDurationError for a string Go refuses or a number outside int64.
 */
export function readGoDuration(value: string | number): bigint {
  if (typeof value === 'string') return parseGoDuration(value);
  if (!Number.isFinite(value) || Math.abs(value) >= 2 ** 63) {
    throw new GoDurationError(`duration ${String(value)} ns is outside int64`);
  }
  return BigInt(Math.trunc(value));
}
