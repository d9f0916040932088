import type { SignalKind } from '../../controller/annotate/signal-decision.js';

/** The flags of `rtb controller`. */
export interface ControllerFlags {
  /** Commander's choices: annotate or direct. */
  mode: 'annotate' | 'direct';
  kubeconfig?: string;
  namespace: string;
  pullSecret: string;
  clusterTrustBundle?: string;
  configMap: string;
  configKey: string;
  manifestsConfigMap?: string;
  runtimeSelector?: string;
  signal: SignalKind;
  coalesce: string;
  /** Unset: the mode's default. */
  concurrency?: string;
  /** Unset: the mode's default (10m direct, 5m annotate). */
  resync?: string;
  stateConfigMap: string;
  metricsPort: string;
  metricsHost: string;
  leaderElect: boolean;
  /** Direct mode: every replica works its share (a Lease each) instead of leader election. */
  sharding?: boolean;
  leaderElectionId: string;
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
  logLevel: string;
  webhookImage?: string;
  webhookPriorityClassName?: string;
  /** Comma-separated: the webhook's restart rights per namespace. */
  webhookRestartNamespaces?: string;
  /** `registry=url`, repeatable. */
  webhookRegistryServer?: string[];
  webhookVersion?: string;
  autoCreate?: string | boolean;
  driftListen?: string;
  driftUrl?: string;
  driftDnsNames?: string;
  caRenewBefore: string;
  caGrace: string;
  runtimeTimeout: string;
  runtimeDeadline: string;
  fullResyncEvery: string;
  rolloutPolicy: string;
  /** false with --no-auto-rollback. */
  autoRollback: boolean;
  certValidity: string;
  certRenewBefore: string;
  /** Direct mode: `--per-runtime-metrics`. */
  perRuntimeMetrics?: boolean;
}

/**
 * Annotate mode's writes: one PATCH of a Runtime on the KCP each, so ten at once signal a fleet
 * of thousands within tens of seconds (docs/figures.md, annotate scale).
 */
export const DEFAULT_ANNOTATE_CONCURRENCY = 10;
