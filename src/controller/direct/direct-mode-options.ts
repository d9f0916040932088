import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CaStore } from '../../pki/ca-store.js';
import { KCP_SERVING_POLICY, type ServingPolicy } from '../../serving-cert/serving-policy.js';
import type { DriftEndpointOptions } from './drift-endpoint.js';
import type { WebhookRelease, WebhookTestRouting } from './runtime-manifests.js';
import type { SyncSources } from './sync-set.js';
import { TRUST_POLL_MS } from './trust-restart-status.js';
import { WORKLOAD_WATCH_MS } from './webhook-report.js';
import type { DirectShardSettings } from './sharded-work.js';
import type { EventRecorder } from '../../kube/event-recorder.js';

/** The sources as direct mode needs them (the source watcher satisfies this). */
export interface DirectSources {
  snapshot(): SyncSources;
  /** Returns the unsubscribe: a mode stopped at the end of a leadership term lets go. */
  onChange(listener: (snapshot: SyncSources) => void): () => void;
}

/**
 * Periodic resyncs per full one: with the default period of 10 min, every runtime is re-applied at
 * least every 2 hours even when its attestations say nothing changed (a runtime's own word is not
 * the only safeguard against tampering on it). A twelfth of the runtimes each period keeps the
 * resync's cost at 5,000 runtimes within its target (docs/figures.md, the periodic resync).
 */
export const DEFAULT_FULL_RESYNC_EVERY = 12;

/** Default of {@link DirectModeSettings.resyncMs}. */
export const DEFAULT_DIRECT_RESYNC_MS = 10 * 60_000;

/** Default of {@link DirectModeSettings.coalesceMs}. */
export const DEFAULT_DIRECT_COALESCE_MS = 500;

/** Default of {@link DirectModeSettings.kubeconfigSelector}: the label KIM puts on its kubeconfig Secrets. */
export const DEFAULT_KUBECONFIG_SELECTOR = 'kyma-project.io/runtime-id';

/** Default of {@link DirectModeSettings.runtimeTimeoutMs}. */
export const DEFAULT_RUNTIME_TIMEOUT_MS = 10_000;

/**
 * Default of {@link DirectModeSettings.runtimeDeadlineMs} (`--runtime-deadline`): how long one call
 * to a runtime may take from its start to its answer's last byte, besides the inactivity timeout;
 * a server that drips a byte now and then ends a pass within this long.
 */
export const DEFAULT_RUNTIME_DEADLINE_MS = 30_000;

/** Default of {@link DirectModeSettings.caSecretName}. */
export const DEFAULT_CA_SECRET_NAME = 'rt-bootstrapper-ca';

/**
 * Direct mode's settings with every default applied ({@link resolveDirectModeSettings}): the one
 * object the mode and its parts read, passed by reference (the reconciler takes it whole). A key
 * is `undefined` only where that means off.
 */
export interface DirectModeSettings {
  readonly release: WebhookRelease;
  /** Runtimes reconciled at once (default {@link DEFAULT_DIRECT_CONCURRENCY}). */
  readonly concurrency: number;
  /** Re-apply everything this often to catch drift (default {@link DEFAULT_DIRECT_RESYNC_MS}; 0 disables). */
  readonly resyncMs: number;
  /**
   * Each runtime is re-applied at least once every this many periodic resyncs (a share of them
   * each period); otherwise one whose latest attestation matches is skipped (docs/attestation.md;
   * default {@link DEFAULT_FULL_RESYNC_EVERY}; 1: every runtime every period).
   */
  readonly fullResyncEvery: number;
  /** Source changes within this window become one fan-out (default {@link DEFAULT_DIRECT_COALESCE_MS}). */
  readonly coalesceMs: number;
  /** Label selector of KIM's kubeconfig Secrets (default {@link DEFAULT_KUBECONFIG_SELECTOR}). */
  readonly kubeconfigSelector: string;
  /** Create a RuntimeBootstrapper per Runtime CR matching this selector ('' = all); undefined = off. */
  readonly autoCreateSelector: string | undefined;
  /** The CA's Secret, unless a CA store is given (default {@link DEFAULT_CA_SECRET_NAME}). */
  readonly caSecretName: string;
  /**
   * Timing of each runtime's webhook serving certificate (docs/serving-certificate.md; default
   * KCP_SERVING_POLICY: 90 days, renewed at half its life).
   */
  readonly servingPolicy: ServingPolicy;
  /** Where tests route admission (no kubelet runs the webhook's Pods there); never set in production. */
  readonly webhookRouting: WebhookTestRouting | undefined;
  /** Serve the drift listener in this process (needs `drift`); undefined = elsewhere or nowhere. */
  readonly driftListener: DriftEndpointOptions | undefined;
  /** Rotate the CA this long before it expires, keeping the old one trusted for the grace period; undefined = never. */
  readonly caRotation:
    | {
        readonly renewBeforeMs: number;
        readonly graceMs: number;
        readonly checkEveryMs?: number;
      }
    | undefined;
  /** The drift channel: runtimes get a client certificate and report tampering to this URL; undefined = off. */
  readonly drift:
    | {
        readonly listenerUrl: string;
        readonly clientValidityMs?: number;
        readonly renewBeforeMs?: number;
      }
    | undefined;
  /** A call to a runtime fails after this long without a byte sent or received (default {@link DEFAULT_RUNTIME_TIMEOUT_MS}). */
  readonly runtimeTimeoutMs: number;
  /**
   * A call to a runtime fails unless its whole answer came within this long (default
   * DEFAULT_RUNTIME_DEADLINE_MS). A server that drips ends a pass in time.
   */
  readonly runtimeDeadlineMs: number;
  /**
   * On stop, how long reconciles in flight may go on before their calls to runtimes are abandoned
   * (default {@link DEFAULT_STOP_DRAIN_MS}).
   */
  readonly stopDrainMs: number;
  /** How often a runtime's trust-bundle rotation under way is looked at (default TRUST_POLL_MS of ./trust-restart-status.ts; tests set it). */
  readonly trustPollMs: number;
  /**
   * How often a runtime's report is read while the rollout watches it (its wave under way, a
   * preflight); a preflight waits three such reads to learn whether a runtime checks (default
   * WORKLOAD_WATCH_MS of ./webhook-report.ts; tests set it).
   */
  readonly workloadWatchMs: number;
  /**
   * Progressive rollout (docs/rollout.md): the RolloutPolicy to follow, if it exists; off when
   * undefined (every runtime gets every change at once).
   */
  readonly rollout:
    | {
        readonly policyName: string;
        /** false: a halt only halts (`--no-auto-rollback`). */
        readonly autoRollback: boolean;
      }
    | undefined;
  /** How long after a drift repair the forced full reconcile follows (default {@link DRIFT_CONFIRM_DELAY_MS}). */
  readonly driftConfirmDelayMs: number;
  /** Work only this replica's share of the runtimes (sharded-work.ts); off (all runtimes) when undefined. */
  readonly shard: DirectShardSettings | undefined;
  /**
   * Also export metrics with a runtime ID label (`rtb_runtime_state`, and each runtime's drift
   * client certificate): one series per runtime (docs/monitoring.md; default off).
   */
  readonly perRuntimeMetrics: boolean;
}

/** What a caller chooses: the release, and any setting that differs from its default. */
export type DirectModeChoices = Pick<DirectModeSettings, 'release'> & Partial<DirectModeSettings>;

/** What direct mode runs against and reports to: the KCP, its namespace, the sources, logs and metrics. */
export interface DirectModeEnv {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly sources: DirectSources;
  readonly logger: Logger;
  readonly registry: Registry;
  /** A CA store shared with the drift listener (loaded); otherwise one is made from `caSecretName`. */
  readonly caStore?: CaStore;
  /** Kubernetes Events (the rollout's, about its RolloutPolicy); none when undefined. */
  readonly events?: EventRecorder;
}

/** Options of startDirectMode: where it runs, and its settings (defaults applied there, once). */
export type DirectModeOptions = DirectModeEnv & DirectModeChoices;

/**
 * Runtimes reconciled at once by default. A fan-out is bound by latency, not by CPU, once runtimes
 * are real clusters: one rotation costs a runtime its four applies and a status write to the KCP,
 * plus a new connection (TCP and TLS, about two round trips) when the idle one was closed, so
 * about seven round trips, 0.15–0.7 s at 20–100 ms. Reaching 5,000 runtimes in 30 s asks for
 * about 170 runtimes a second, hence (Little's law) 5,000 / 30 s × 0.7 s ≈ 120 in flight at the
 * far end, about 170 with the servers' own time: 200 leaves room. A runtime's own requests are
 * sequential, so a higher number costs sockets and memory (a few KB per reconcile), not CPU.
 */
export const DEFAULT_DIRECT_CONCURRENCY = 200;

/**
 * How long a stopping direct mode lets reconciles in flight finish before it abandons their calls
 * to runtimes: a reconcile of a runtime that answers takes well under a second, and the rest of the
 * stop (the Lease, the watches, the Events) must fit the Pod's grace period of 30 s with it.
 */
export const DEFAULT_STOP_DRAIN_MS = 5_000;

/** Default of {@link DirectModeSettings.driftConfirmDelayMs}. */
export const DRIFT_CONFIRM_DELAY_MS = 1_000;

/** A running direct mode. */
export interface DirectMode {
  /** The drift listener's port, when it runs here. */
  readonly driftPort: number | undefined;
  /** The CA store (for tests and the drift channel). */
  readonly cas: CaStore;
  /** Rotates the CA now: the listener trusts old and new, and every runtime gets new certificates. */
  rotateCa(graceMs: number): Promise<void>;
  /** Queues every runtime for a full re-apply now (a CA change does). */
  resyncAll(): void;
  /**
   * Runs one period's resync now, as its timer does: runtimes whose attestation matches are
   * skipped unless it is their turn for a full one (docs/attestation.md). Says how many were
   * forced and skipped.
   */
  periodicResync(): { forced: number; skipped: number };
  /** Queues a runtime for an immediate full re-apply; false if no RuntimeBootstrapper names it. */
  resync(runtimeId: string): boolean;
  /** Stops; a sharded replica releases its Lease unless `releaseShard` is false (a crash, in tests). */
  stop(options?: { readonly releaseShard?: boolean }): Promise<void>;
}

/**
 * Applies every default: the only place direct mode's defaults are filled in. Settings already
 * resolved come back unchanged, so a caller may resolve early and pass the result down.
 */
export function resolveDirectModeSettings(c: DirectModeChoices): DirectModeSettings {
  return {
    release: c.release,
    concurrency: c.concurrency ?? DEFAULT_DIRECT_CONCURRENCY,
    resyncMs: c.resyncMs ?? DEFAULT_DIRECT_RESYNC_MS,
    fullResyncEvery: c.fullResyncEvery ?? DEFAULT_FULL_RESYNC_EVERY,
    coalesceMs: c.coalesceMs ?? DEFAULT_DIRECT_COALESCE_MS,
    kubeconfigSelector: c.kubeconfigSelector ?? DEFAULT_KUBECONFIG_SELECTOR,
    autoCreateSelector: c.autoCreateSelector,
    caSecretName: c.caSecretName ?? DEFAULT_CA_SECRET_NAME,
    servingPolicy: c.servingPolicy ?? KCP_SERVING_POLICY,
    webhookRouting: c.webhookRouting,
    driftListener: c.driftListener,
    caRotation: c.caRotation,
    drift: c.drift,
    runtimeTimeoutMs: c.runtimeTimeoutMs ?? DEFAULT_RUNTIME_TIMEOUT_MS,
    runtimeDeadlineMs: c.runtimeDeadlineMs ?? DEFAULT_RUNTIME_DEADLINE_MS,
    stopDrainMs: c.stopDrainMs ?? DEFAULT_STOP_DRAIN_MS,
    trustPollMs: c.trustPollMs ?? TRUST_POLL_MS,
    workloadWatchMs: c.workloadWatchMs ?? WORKLOAD_WATCH_MS,
    rollout: c.rollout,
    driftConfirmDelayMs: c.driftConfirmDelayMs ?? DRIFT_CONFIRM_DELAY_MS,
    shard: c.shard,
    perRuntimeMetrics: c.perRuntimeMetrics ?? false,
  };
}
