/**
 * The runtime attestor's decisions (pure): what an answer of the KCP listener means, and how long
 * to wait before the next attestation. The loop that acts on them is ./attestor.ts.
 */
import { parseAttestationAnswer, type AttestationAnswer } from '../api/attestation.js';
import { parseRetryAfter } from './retry-after.js';

/** How one exchange with the listener ended. */
export type AttestationExchange =
  /** A valid answer: read its `check` next time, after its `nextAfterSeconds`. */
  | { readonly kind: 'answered'; readonly answer: AttestationAnswer }
  /** Worth retrying soon (network, 5xx, 408, 429, an unparsable answer); `why` is for logs. */
  | { readonly kind: 'retry'; readonly why: string; readonly retryAfterMs?: number }
  /** Another answer (a 4xx: no such route, certificate refused…): retrying soon would not help. */
  | { readonly kind: 'refused'; readonly status: number };

/** The share of `nextAfterSeconds` a runtime waits at least: its wait is uniform in [0.8, 1.0]×. */
export const ANSWER_JITTER_FLOOR = 0.8;

/**
 * What a status, Retry-After and body mean (only a 200 with a valid answer counts as answered;
 * a Retry-After is read on every retryable status, capped at `capMs`).
 */
export function judgeExchange(
  status: number,
  retryAfter: string | undefined,
  body: Buffer,
  capMs: number,
  now: number = Date.now(),
): AttestationExchange {
  if (status === 200) {
    try {
      return { kind: 'answered', answer: parseAttestationAnswer(body) };
    } catch (error) {
      // The parser's message names the field, never the body's content.
      return { kind: 'retry', why: error instanceof Error ? error.message : 'unparsable answer' };
    }
  }
  if (status === 408 || status === 429 || status >= 500) {
    return { kind: 'retry', why: `HTTP ${status}`, retryAfterMs: parseRetryAfter(retryAfter, capMs, now) };
  }
  return { kind: 'refused', status };
}

/**
 * The wait the KCP asked for, times a uniform factor in [{@link ANSWER_JITTER_FLOOR}, 1.0]:
 * never later than asked (the KCP may count on it), and runtimes answered in one instant
 * spread out over a fifth of the period.
 */
export function answerWaitMs(nextAfterSeconds: number, random: () => number): number {
  const factor = ANSWER_JITTER_FLOOR + (1 - ANSWER_JITTER_FLOOR) * clampUnit(random());
  return nextAfterSeconds * 1000 * factor;
}

/**
 * The wait after a retryable failure: the backoff's delay, or the Retry-After (plus up to
 * `jitter` of it, so runtimes told the same instant do not return in it) when that is longer.
 */
export function retryWaitMs(
  backoffMs: number,
  retryAfterMs: number | undefined,
  jitter: number,
  random: () => number,
): number {
  if (retryAfterMs === undefined) return backoffMs;
  return Math.max(backoffMs, retryAfterMs * (1 + jitter * clampUnit(random())));
}

function clampUnit(x: number): number {
  return Math.min(1, Math.max(0, x));
}
