/**
 * Direct mode's expiry metrics and the opt-in per-runtime metrics, computed at each scrape from
 * what the mode holds: the CA, the drift listener's certificate, and each runtime's drift client
 * certificate (aggregated per state, never per runtime unless asked for).
 */
import type { Registry } from 'prom-client';
import type { BootstrapperState } from '../../api/runtime-bootstrapper.js';
import { ScrapeSlot, scrapedGauge } from '../../telemetry/scraped-gauge.js';
import {
  DRIFT_CLIENT_CERT_EXPIRY,
  DRIFT_CLIENT_CERTS_EXPIRING,
  DRIFT_LISTENER_CERT_EXPIRY,
  EXPIRING_SOON_SECONDS,
  KCP_CA_EXPIRY,
  NOT_READY_SINCE,
  RUNTIME_DRIFT_CLIENT_CERT_EXPIRY,
  RUNTIME_STATE,
  RUNTIMES_BY_ADMISSION_PATH,
} from './expiry-metric-specs.js';
import { NotReadyClock } from './not-ready-clock.js';

/** One runtime as the metrics see it. */
export interface FleetRuntime {
  /** The RuntimeBootstrapper's key (`namespace/name`). */
  readonly key: string;
  readonly runtimeId: string;
  readonly state: BootstrapperState;
  /** notAfter (epoch ms) of the drift client certificate last given to the runtime; undefined without one. */
  readonly driftNotAfter: number | undefined;
  /** How Pods are mutated there: our admission policy, or the webhook alone. */
  readonly admissionPath: 'policy' | 'webhook';
}

/** What the metrics read at a scrape. */
export interface FleetExpirySource {
  /** notAfter (epoch ms) of the CA that signs now. */
  caNotAfter(): number | undefined;
  /** notAfter (epoch ms) of the drift listener's certificate; undefined when the listener runs elsewhere. */
  listenerNotAfter(): number | undefined;
  /** The runtimes this replica works. */
  runtimes(): Iterable<FleetRuntime>;
}

/** Per state: the earliest drift client certificate and how many expire soon. */
export interface DriftCertificateSummary {
  readonly earliest: ReadonlyMap<BootstrapperState, number>;
  readonly expiringSoon: ReadonlyMap<BootstrapperState, number>;
}

/** Summarizes the runtimes' drift client certificates per state (pure). */
export function summarizeDriftCertificates(
  runtimes: Iterable<FleetRuntime>,
  nowMs: number,
): DriftCertificateSummary {
  const earliest = new Map<BootstrapperState, number>();
  const expiringSoon = new Map<BootstrapperState, number>();
  const soon = nowMs + EXPIRING_SOON_SECONDS * 1000;
  for (const r of runtimes) {
    if (r.driftNotAfter === undefined) continue;
    const before = earliest.get(r.state);
    if (before === undefined || r.driftNotAfter < before) earliest.set(r.state, r.driftNotAfter);
    expiringSoon.set(r.state, (expiringSoon.get(r.state) ?? 0) + (r.driftNotAfter <= soon ? 1 : 0));
  }
  return { earliest, expiringSoon };
}

interface Attached {
  readonly source: FleetExpirySource;
  readonly perRuntime: boolean;
}

const seconds = (ms: number): number => ms / 1000;

/**
 * Attaches `source` to the metrics on `registry` (registered on first use; the per-runtime ones
 * only once `perRuntime` asks for them). Returns the detach.
 */
export function attachFleetExpiryMetrics(
  registry: Registry,
  source: FleetExpirySource,
  options: { readonly perRuntime: boolean; readonly now?: () => number },
): () => void {
  const now = options.now ?? Date.now;
  const slot = ScrapeSlot.of<Attached>(registry, 'fleet-expiry', (s) => {
    const clock = new NotReadyClock();
    const summary = (): DriftCertificateSummary | undefined => {
      const a = s.current();
      return a ? summarizeDriftCertificates(a.source.runtimes(), now()) : undefined;
    };
    scrapedGauge(registry, KCP_CA_EXPIRY, (g) => {
      const at = s.current()?.source.caNotAfter();
      if (at !== undefined) g.set(seconds(at));
    });
    scrapedGauge(registry, DRIFT_LISTENER_CERT_EXPIRY, (g) => {
      const at = s.current()?.source.listenerNotAfter();
      if (at !== undefined) g.set(seconds(at));
    });
    scrapedGauge(registry, DRIFT_CLIENT_CERT_EXPIRY, (g) => {
      for (const [state, at] of summary()?.earliest ?? []) g.set({ state }, seconds(at));
    });
    scrapedGauge(registry, DRIFT_CLIENT_CERTS_EXPIRING, (g) => {
      for (const [state, n] of summary()?.expiringSoon ?? []) g.set({ state }, n);
    });
    scrapedGauge(registry, RUNTIMES_BY_ADMISSION_PATH, (g) => {
      const a = s.current();
      if (a === undefined) return;
      const counts = { policy: 0, webhook: 0 };
      for (const r of a.source.runtimes()) counts[r.admissionPath] += 1;
      for (const [path, n] of Object.entries(counts)) g.set({ path }, n);
    });
    scrapedGauge(registry, NOT_READY_SINCE, (g) => {
      const a = s.current();
      const since = a ? clock.observe(a.source.runtimes(), now()) : undefined;
      if (since !== undefined) g.set(seconds(since));
    });
  });
  if (options.perRuntime) {
    // Registered once per registry; they read the same attached source.
    ScrapeSlot.of<never>(registry, 'per-runtime', () => {
      const perRuntime = (): Iterable<FleetRuntime> => {
        const a = slot.current();
        return a?.perRuntime === true ? a.source.runtimes() : [];
      };
      scrapedGauge(registry, RUNTIME_STATE, (g) => {
        for (const r of perRuntime()) g.set({ runtime_id: r.runtimeId, state: r.state }, 1);
      });
      scrapedGauge(registry, RUNTIME_DRIFT_CLIENT_CERT_EXPIRY, (g) => {
        for (const r of perRuntime())
          if (r.driftNotAfter !== undefined) g.set({ runtime_id: r.runtimeId }, seconds(r.driftNotAfter));
      });
    });
  }
  return slot.attach({ source, perRuntime: options.perRuntime });
}
