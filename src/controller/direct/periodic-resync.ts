/**
 * Direct mode's periodic resync with attestations (docs/attestation.md): every period, each
 * runtime is re-applied in full unless its latest attestation, received within the period,
 * matches what the KCP's own writes and reads left there; and each runtime is re-applied
 * regardless once every `fullEvery` periods, a different share of them each period (by a hash of
 * the key), so that safeguard costs the same every period instead of a burst of all at once. An
 * attestation that does not match a complete record asks for a full pass of that runtime at
 * once: something was written there that was not ours.
 */
import type { Logger } from 'pino';
import type { Counter, Registry } from 'prom-client';
import type { Attestation } from '../../api/attestation.js';
import { counterOn } from '../../telemetry/prom-metrics.js';
import type { AttestationReply } from '../../drift/attestation-receiver.js';
import type { AttestationBook } from './attestation-book.js';

/** What the periodic resync needs. */
export interface PeriodicResyncOptions {
  /** The period (ms); 0 disables the timer (attestations are still answered). */
  readonly periodMs: number;
  /** Each runtime is re-applied at least once every this many periods (1: every period). */
  readonly fullEvery: number;
  /** The keys of all RuntimeBootstrappers this replica holds. */
  readonly keys: () => Iterable<string>;
  /** The key of a runtime's CR, if any. */
  readonly keyOfRuntime: (runtimeId: string) => string | undefined;
  /** Whether this replica works `key` (sharding); always true without it. */
  readonly works: (key: string) => boolean;
  /** Queue a full (forced) pass of `key`. */
  readonly force: (key: string) => void;
  /**
   * The runtimes' attestations: made before the reconciler and this resync, as both read it (the
   * reconciler records each pass's writes in it; made with {@link attestIntervalSeconds} of the period).
   */
  readonly book: AttestationBook;
  readonly registry: Registry;
  readonly logger: Logger;
}

/**
 * At most one full pass per runtime this often on out-of-sync attestations: a forced pass costs
 * the KCP tens of ms, so a runtime attesting out of sync without pause (a forger, a loop) costs
 * it a fraction of a percent of a core; later ones within the interval are coalesced into one
 * pass at its end, so a real change is still repaired within it.
 */
export const OUT_OF_SYNC_PASS_INTERVAL_MS = 30_000;

/** How often runtimes attest when the resync is off: as with the default period. */
const DEFAULT_ATTEST_SECONDS = 300;

/**
 * The `nextAfterSeconds` answered to runtimes: 0.9 of a period, or 30 s less than the period if
 * that is shorter, never under 0.7 of it. A runtime waits 0.8–1.0 × this, so its attestor (one
 * webhook replica) attests within every period (with room for a slow exchange) and every tick
 * finds an attestation of the period before it; {@link DEFAULT_ATTEST_SECONDS} without a timer.
 */
export function attestIntervalSeconds(periodMs: number): number {
  if (periodMs <= 0) return DEFAULT_ATTEST_SECONDS;
  const seconds = periodMs / 1000;
  return Math.max(1, Math.floor(Math.max(0.7 * seconds, Math.min(0.9 * seconds, seconds - 30))));
}

/** The periodic resync and the attestations that let it skip runtimes. */
export class PeriodicResync {
  /** The attestations (see {@link PeriodicResyncOptions.book}). */
  readonly book: AttestationBook;
  private readonly received: Counter<'verdict'>;
  private readonly passes: Counter<'action'>;
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;
  /** Per key: when an out-of-sync attestation may force a pass again, and a pass deferred to then. */
  private readonly outOfSync = new Map<string, { until: number; deferred?: NodeJS.Timeout }>();

  constructor(private readonly o: PeriodicResyncOptions) {
    this.book = o.book;
    this.received = counterOn(o.registry, {
      name: 'rtb_attestations_received_total',
      help: 'Attestations of runtimes by verdict: in_sync, out_of_sync (a full pass follows), unrecorded (no complete record yet), initial (an empty one asking for the list), stale (matches, but echoes no challenge of this period or the previous one: skips nothing), elsewhere (another replica works the runtime).',
      labelNames: ['verdict'],
    });
    this.passes = counterOn(o.registry, {
      name: 'rtb_periodic_resync_runtimes_total',
      help: 'Runtimes at periodic resyncs: forced (re-applied in full) or skipped (their attestation matched).',
      labelNames: ['action'],
    });
  }

  start(): void {
    if (this.o.periodMs > 0 && !this.timer)
      this.timer = setInterval(() => {
        this.tick();
      }, this.o.periodMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const o of this.outOfSync.values()) clearTimeout(o.deferred);
    this.outOfSync.clear();
  }

  /** One period's resync (the timer's; tests and benchmarks call it directly). */
  tick(now = Date.now()): { forced: number; skipped: number } {
    this.ticks += 1;
    const every = Math.max(1, this.o.fullEvery);
    const turn = this.ticks % every;
    const since = now - (this.o.periodMs > 0 ? this.o.periodMs : DEFAULT_ATTEST_SECONDS * 2000);
    let forced = 0;
    let skipped = 0;
    for (const key of this.o.keys()) {
      if (bucketOf(key, every) !== turn && this.book.inSync(key, since)) {
        skipped += 1;
        continue;
      }
      forced += 1;
      this.o.force(key);
    }
    this.book.nextRound();
    this.passes.inc({ action: 'forced' }, forced);
    this.passes.inc({ action: 'skipped' }, skipped);
    this.o.logger.info({ forced, skipped }, 'periodic resync');
    return { forced, skipped };
  }

  /** The drift listener's attestation handler. */
  readonly attest = (runtimeId: string, attestation: Attestation, receivedAt: number): AttestationReply => {
    const key = this.o.keyOfRuntime(runtimeId);
    if (key === undefined || !this.o.works(key)) {
      // The listener knew the runtime, so another replica works it (or its CR just went): the
      // answer closes the connection, and the retry may reach the right one.
      this.received.inc({ verdict: 'elsewhere' });
      return {
        status: 503,
        reason: 'another replica works this runtime',
        retryAfterSeconds: 1 + Math.floor(Math.random() * 5),
      };
    }
    const { verdict, answer, differing } = this.book.attest(key, attestation, receivedAt);
    this.received.inc({ verdict });
    if (verdict === 'out_of_sync') {
      // Names and resourceVersions only: what was written, never what it holds.
      this.o.logger.info({ runtime: key, differing }, 'attestation out of sync: re-applying the runtime');
      this.forceLimited(key, receivedAt);
    }
    return { status: 200, answer };
  };

  /** Forces `key` at once, or, within {@link OUT_OF_SYNC_PASS_INTERVAL_MS} of the last, once at its end. */
  private forceLimited(key: string, now: number): void {
    const last = this.outOfSync.get(key);
    if (last === undefined || now >= last.until) {
      clearTimeout(last?.deferred);
      this.outOfSync.set(key, { until: now + OUT_OF_SYNC_PASS_INTERVAL_MS });
      this.o.force(key);
      return;
    }
    if (last.deferred) return;
    last.deferred = setTimeout(
      () => {
        this.outOfSync.set(key, { until: Date.now() + OUT_OF_SYNC_PASS_INTERVAL_MS });
        this.o.force(key);
      },
      Math.max(0, last.until - Date.now()),
    );
    last.deferred.unref();
  }
}

/** Which of `n` shares a key falls in (FNV-1a of the key): stable across periods and restarts. */
export function bucketOf(key: string, n: number): number {
  if (n <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % n;
}
