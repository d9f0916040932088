import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GoDurationError, parseGoDuration, readGoDuration } from '../../../src/api/go-duration.js';

// Cases from Go's own time.ParseDuration tests (src/time/time_test.go), in nanoseconds.
const valid: readonly [string, bigint][] = [
  ['0', 0n],
  ['5s', 5_000_000_000n],
  ['30s', 30_000_000_000n],
  ['1478s', 1_478_000_000_000n],
  ['-5s', -5_000_000_000n],
  ['+5s', 5_000_000_000n],
  ['-0', 0n],
  ['+0', 0n],
  ['5.0s', 5_000_000_000n],
  ['5.6s', 5_600_000_000n],
  ['5.s', 5_000_000_000n],
  ['.5s', 500_000_000n],
  ['1.0s', 1_000_000_000n],
  ['1.00s', 1_000_000_000n],
  ['1.004s', 1_004_000_000n],
  ['1.0040s', 1_004_000_000n],
  ['100.00100s', 100_001_000_000n],
  ['10ns', 10n],
  ['11us', 11_000n],
  ['12\u00b5s', 12_000n],
  ['12\u03bcs', 12_000n],
  ['13ms', 13_000_000n],
  ['14s', 14_000_000_000n],
  ['15m', 900_000_000_000n],
  ['16h', 57_600_000_000_000n],
  ['3h30m', 12_600_000_000_000n],
  ['10.5s4m', 250_500_000_000n],
  ['-2m3.4s', -123_400_000_000n],
  ['1h2m3s4ms5us6ns', 3_723_004_005_006n],
  ['39h9m14.425s', 140_954_425_000_000n],
  ['52763797000ns', 52_763_797_000n],
  ['0.3333333333333333333h', 1_200_000_000_000n],
  ['9007199254740993ns', 9_007_199_254_740_993n],
  ['9223372036854775807ns', 9_223_372_036_854_775_807n],
  ['9223372036854775.807us', 9_223_372_036_854_775_807n],
  ['9223372036s854ms775us807ns', 9_223_372_036_854_775_807n],
  ['-9223372036854775808ns', -9_223_372_036_854_775_808n],
  ['-9223372036854775.808us', -9_223_372_036_854_775_808n],
  ['0.100000000000000000000h', 360_000_000_000n],
  ['0.830103483285477580700h', 2_988_372_539_827n],
];

const invalid: readonly [string, RegExp][] = [
  ['', /invalid duration ""/],
  ['3', /missing unit/],
  ['-', /invalid duration/],
  ['s', /invalid duration/],
  ['.', /invalid duration/],
  ['-.', /invalid duration/],
  ['.s', /invalid duration/],
  ['+.s', /invalid duration/],
  ['1d', /unknown unit "d"/],
  ['\x85\x85', /invalid duration/],
  ['9223372036854775808ns', /invalid duration/],
  ['9223372036854775.808us', /invalid duration/],
  ['9223372036854ms775us808ns', /invalid duration/],
  ['10 s', /unknown unit " s"/],
];

describe('parseGoDuration (Go time.ParseDuration)', () => {
  for (const [text, nanos] of valid) {
    test(JSON.stringify(text), () => {
      assert.equal(parseGoDuration(text), nanos);
    });
  }
  for (const [text, message] of invalid) {
    test(`refuses ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseGoDuration(text),
        (error: unknown) => error instanceof GoDurationError && message.test(error.message),
      );
    });
  }
});

describe('readGoDuration (upstream Duration.UnmarshalJSON)', () => {
  test('a number is nanoseconds, truncated toward zero', () => {
    assert.equal(readGoDuration(1_000_000_000), 1_000_000_000n);
    assert.equal(readGoDuration(1.9), 1n);
    assert.equal(readGoDuration(-1.9), -1n);
  });

  test('a string is a Go duration', () => {
    assert.equal(readGoDuration('1m'), 60_000_000_000n);
  });

  test('a number outside int64 is refused', () => {
    assert.throws(() => readGoDuration(2 ** 63), GoDurationError);
    assert.throws(() => readGoDuration(Number.NaN), GoDurationError);
  });
});
