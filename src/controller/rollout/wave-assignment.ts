import { createHash } from 'node:crypto';
import { matchesSelector } from './label-selector.js';
import type { RolloutWave } from './rollout-policy.js';

/** What wave assignment reads of a runtime. */
export interface WaveCandidate {
  readonly id: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * Positions already hashed: a rollout pass places every runtime, several times a second during a
 * fan-out, and a SHA-256 per runtime was most of a pass's CPU.
 */
const positions = new Map<string, number>();
const POSITIONS_KEPT = 100_000;

/**
 * A runtime's place in [0, 1), from its ID alone: the same on every replica and after every
 * restart, and a runtime added or removed moves nobody else.
 */
export function hashPosition(id: string): number {
  let u = positions.get(id);
  if (u === undefined) {
    const digest = createHash('sha256').update('rt-bootstrapper/rollout/v1\0').update(id).digest();
    u = digest.readUInt32BE(0) / 2 ** 32;
    // Bounded: a fleet's IDs fit many times over; runtimes long gone are forgotten now and then.
    if (positions.size >= POSITIONS_KEPT) positions.clear();
    positions.set(id, u);
  }
  return u;
}

/**
 * The wave of each runtime (pure): the first wave whose selector (if any) matches it and whose
 * share (if any) holds its hash position. Shares are cumulative lines on one position, so
 * "10 % of the rest" after a 1 % wave is the line 0.01 + 0.99 × 0.10, and membership depends on
 * the runtime alone, not on the fleet's size or order. Runtimes no wave takes get index
 * `waves.length`: an implicit last wave.
 */
export function assignWaves(
  waves: readonly RolloutWave[],
  runtimes: readonly WaveCandidate[],
): Map<string, number> {
  const lines: number[] = [];
  let line = 0;
  for (const w of waves) {
    if (w.percent !== undefined) line = w.percent >= 100 ? 1 : line + (1 - line) * (w.percent / 100);
    lines.push(line);
  }
  const out = new Map<string, number>();
  for (const r of runtimes) {
    const u = hashPosition(r.id);
    const wave = waves.findIndex(
      (w, i) =>
        (w.selector === undefined || matchesSelector(w.selector, r.labels)) &&
        (w.percent === undefined || u < (lines[i] ?? 0)),
    );
    out.set(r.id, wave < 0 ? waves.length : wave);
  }
  return out;
}
