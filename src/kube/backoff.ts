/**
 * Backoff and rate limiting primitives in the spirit of client-go's `workqueue`
 * rate limiters: a jittered exponential delay, a per-key failure tracker, a global
 * token bucket, and a "max of" combinator. All of them compute delays only; none
 * of them sleeps or owns a timer, so they are pure apart from the injected clock
 * and random source.
 */

/** A source of the current time in milliseconds; injectable so tests control time. */
export interface Clock {
  now(): number;
}

/** The wall clock (monotonic where available, so a system clock step does not skew delays). */
export const systemClock: Clock = { now: () => performance.now() };

/** Parameters of a jittered exponential backoff. */
export interface BackoffOptions {
  /** Delay of the first retry, in ms. */
  readonly baseMs: number;
  /** Upper bound of the un-jittered delay, in ms. */
  readonly maxMs: number;
  /** Growth per attempt (default 2). */
  readonly factor?: number;
  /**
   * Fraction of the delay added at random, in [0, 1] (default 0). As in client-go's
   * `wait.Jitter`, the result lies in `[d, d * (1 + jitter))`, so it may exceed `maxMs`
   * by up to that fraction: capping after jitter would re-synchronise every caller at
   * the cap, which is exactly what jitter is for.
   */
  readonly jitter?: number;
  /** Random source in [0, 1) (default `Math.random`). */
  readonly random?: () => number;
}

/** Thrown when backoff or rate limiter options are out of range. */
export class BackoffOptionsError extends Error {
  override readonly name = 'BackoffOptionsError';
}

function validate(opts: BackoffOptions): void {
  const factor = opts.factor ?? 2;
  const jitter = opts.jitter ?? 0;
  if (
    !(opts.baseMs >= 0) ||
    !(opts.maxMs >= opts.baseMs) ||
    !(factor >= 1) ||
    !(jitter >= 0 && jitter <= 1)
  ) {
    throw new BackoffOptionsError(
      `invalid backoff: baseMs=${opts.baseMs} maxMs=${opts.maxMs} factor=${factor} jitter=${jitter}`,
    );
  }
}

/**
 * The delay before retry number `attempt` (0-based): `min(maxMs, baseMs * factor^attempt)`
 * plus jitter.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions): number {
  const factor = opts.factor ?? 2;
  const jitter = opts.jitter ?? 0;
  // Math.pow overflows to Infinity for large attempts; min() handles that.
  const raw = Math.min(opts.maxMs, opts.baseMs * Math.pow(factor, Math.max(0, attempt)));
  if (jitter === 0) return raw;
  const random = opts.random ?? Math.random;
  return raw + raw * jitter * random();
}

/**
 * A stateful backoff for one retrying loop (e.g. a reflector's re-watch):
 * `next()` returns the next delay and advances, `reset()` starts over after success.
 */
export class Backoff {
  private attempt = 0;

  constructor(private readonly opts: BackoffOptions) {
    validate(opts);
  }

  /** The delay to wait now; each call grows the following one. */
  next(): number {
    const delay = backoffDelay(this.attempt, this.opts);
    this.attempt++;
    return delay;
  }

  /** Number of delays handed out since the last reset. */
  attempts(): number {
    return this.attempt;
  }

  /** Forget past failures. */
  reset(): void {
    this.attempt = 0;
  }
}

/**
 * A rate limiter for keyed work, as client-go's `TypedRateLimiter`: `when` records a
 * failure (or a rate-limited add) of `key` and returns how long to wait before it
 * is processed again.
 */
export interface RateLimiter<K = string> {
  /** Delay in ms before `key` may be processed again; records one more retry. */
  when(key: K): number;
  /** Stop tracking `key` (after it succeeded). */
  forget(key: K): void;
  /** How many times `when(key)` was called since the last `forget(key)`. */
  retries(key: K): number;
}

/**
 * Per-key exponential backoff, as client-go's `ItemExponentialFailureRateLimiter`:
 * the n-th failure of a key waits `base * factor^n` (capped), independently of other keys.
 */
export class ItemExponentialBackoff<K = string> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(private readonly opts: BackoffOptions) {
    validate(opts);
  }

  when(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return backoffDelay(n, this.opts);
  }

  forget(key: K): void {
    this.failures.delete(key);
  }

  retries(key: K): number {
    return this.failures.get(key) ?? 0;
  }
}

/** Parameters of a token bucket. */
export interface TokenBucketOptions {
  /** Tokens added per second. */
  readonly qps: number;
  /** Bucket size: how many items may pass at once after a quiet period. */
  readonly burst: number;
  readonly clock?: Clock;
}

/**
 * A global token bucket, as client-go's `BucketRateLimiter` over `rate.Limiter`:
 * every `when()` reserves one token, possibly in the future, and returns how long
 * until that token exists. Reservations are never cancelled, so a burst of N keys
 * is spread out at `qps` regardless of the key.
 */
export class TokenBucketRateLimiter<K = string> implements RateLimiter<K> {
  private tokens: number;
  private last: number;
  private readonly clock: Clock;

  constructor(private readonly opts: TokenBucketOptions) {
    if (!(opts.qps > 0) || !(opts.burst >= 1)) {
      throw new BackoffOptionsError(`invalid token bucket: qps=${opts.qps} burst=${opts.burst}`);
    }
    this.clock = opts.clock ?? systemClock;
    this.tokens = opts.burst;
    this.last = this.clock.now();
  }

  when(_key: K): number {
    const now = this.clock.now();
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    this.tokens = Math.min(this.opts.burst, this.tokens + (elapsed / 1000) * this.opts.qps);
    this.tokens -= 1;
    // A negative balance is a debt paid back at qps: that is the wait for this token.
    return this.tokens >= 0 ? 0 : (-this.tokens / this.opts.qps) * 1000;
  }

  forget(_key: K): void {
    // The bucket is global; there is nothing per key to forget.
  }

  retries(_key: K): number {
    return 0;
  }
}

/**
 * Combines limiters: the delay is the longest any of them asks for, retries the
 * highest count, and `forget` reaches all, as client-go's `MaxOfRateLimiter`.
 */
export class MaxOfRateLimiter<K = string> implements RateLimiter<K> {
  private readonly limiters: readonly RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    if (limiters.length === 0) throw new BackoffOptionsError('MaxOfRateLimiter needs at least one limiter');
    this.limiters = limiters;
  }

  when(key: K): number {
    // Every limiter must see the call (the bucket reserves, the per-key one counts).
    let delay = 0;
    for (const l of this.limiters) delay = Math.max(delay, l.when(key));
    return delay;
  }

  forget(key: K): void {
    for (const l of this.limiters) l.forget(key);
  }

  retries(key: K): number {
    let n = 0;
    for (const l of this.limiters) n = Math.max(n, l.retries(key));
    return n;
  }
}

/** Options of {@link defaultControllerRateLimiter}; every field defaults to client-go's value. */
export interface DefaultControllerRateLimiterOptions {
  /** Per-key first delay (default 5 ms). */
  readonly baseMs?: number;
  /** Per-key cap (default 1000 s). */
  readonly maxMs?: number;
  /** Per-key growth (default 2). */
  readonly factor?: number;
  /** Per-key jitter fraction (default 0, like client-go). */
  readonly jitter?: number;
  /** Global retries per second (default 10). */
  readonly qps?: number;
  /** Global burst (default 100). */
  readonly burst?: number;
  readonly clock?: Clock;
  readonly random?: () => number;
}

/**
 * client-go's `DefaultControllerRateLimiter`: per-key exponential backoff (5 ms … 1000 s)
 * combined with a global 10 qps / 100 burst bucket, taking the larger delay.
 */
export function defaultControllerRateLimiter<K = string>(
  opts: DefaultControllerRateLimiterOptions = {},
): MaxOfRateLimiter<K> {
  const perItem = new ItemExponentialBackoff<K>({
    baseMs: opts.baseMs ?? 5,
    maxMs: opts.maxMs ?? 1_000_000,
    factor: opts.factor ?? 2,
    jitter: opts.jitter ?? 0,
    random: opts.random,
  });
  const bucket = new TokenBucketRateLimiter<K>({
    qps: opts.qps ?? 10,
    burst: opts.burst ?? 100,
    clock: opts.clock,
  });
  return new MaxOfRateLimiter<K>(perItem, bucket);
}
