import { systemClock, type Clock } from '../kube/backoff.js';

/** Rate of one runtime's requests. */
export interface RuntimeRateLimit {
  /** Tokens added per second. */
  readonly perSecond: number;
  /** Bucket size: requests allowed at once after a quiet period. */
  readonly burst: number;
}

/** Options of {@link RuntimeRateLimiter}. */
export interface RuntimeRateLimiterOptions extends RuntimeRateLimit {
  readonly clock?: Clock;
}

interface Bucket {
  tokens: number;
  last: number;
}

/** Rate limit options out of range. */
export class RateLimitOptionsError extends Error {
  override readonly name = 'RateLimitOptionsError';
}

// Buckets that have refilled are forgotten now and then, so the map holds the busy runtimes only.
const SWEEP_EVERY = 4096;

/**
 * One token bucket per runtime, so a runtime that floods the listener is throttled alone.
 * Unlike the controller's {@link TokenBucketRateLimiter}, a refused request takes no token
 * and leaves no debt: it is answered 429 at once, and the runtime may come back when the
 * returned delay has passed.
 */
export class RuntimeRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly clock: Clock;
  private calls = 0;

  constructor(private readonly opts: RuntimeRateLimiterOptions) {
    if (!(opts.perSecond > 0) || !(opts.burst >= 1)) {
      throw new RateLimitOptionsError(`invalid rate limit: perSecond=${opts.perSecond} burst=${opts.burst}`);
    }
    this.clock = opts.clock ?? systemClock;
  }

  /** Takes a token for `runtimeId`: 0 when allowed, else the ms until a token is available. */
  tryTake(runtimeId: string): number {
    const now = this.clock.now();
    if (++this.calls % SWEEP_EVERY === 0) this.sweep(now);
    let bucket = this.buckets.get(runtimeId);
    if (bucket === undefined) {
      bucket = { tokens: this.opts.burst, last: now };
      this.buckets.set(runtimeId, bucket);
    } else {
      this.refill(bucket, now);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return ((1 - bucket.tokens) / this.opts.perSecond) * 1000;
  }

  /** Number of runtimes with a bucket that has not refilled (for tests and metrics). */
  get tracked(): number {
    return this.buckets.size;
  }

  private refill(bucket: Bucket, now: number): void {
    const elapsed = Math.max(0, now - bucket.last);
    bucket.tokens = Math.min(this.opts.burst, bucket.tokens + (elapsed / 1000) * this.opts.perSecond);
    bucket.last = now;
  }

  private sweep(now: number): void {
    for (const [id, bucket] of this.buckets) {
      this.refill(bucket, now);
      if (bucket.tokens >= this.opts.burst) this.buckets.delete(id);
    }
  }
}
