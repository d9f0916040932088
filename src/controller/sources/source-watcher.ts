/**
 * The contract of the source watcher (source-set.ts implements it): the source kinds, what a
 * snapshot of them holds, what counts as a problem, and the watcher's settings. Its own
 * module so consumers (the modes, the leader term, the tests) depend on the shape only.
 */
import type { KubeConfig, V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ClusterTrustBundle } from '../../api/cluster-trust-bundle.js';
import type { Logger } from '../../telemetry/logger.js';
import type { ControllerMetrics, SourceProblemReason } from '../controller-metrics.js';
import type { EventRecorder } from '../../kube/event-recorder.js';

/**
 * The sources: the three that reach the runtimes, and KIM's manifests ConfigMap (annotate mode
 * only, optional), whose new release KIM installs when signalled.
 */
export type SourceKind = 'pullSecret' | 'clusterTrustBundle' | 'configMap' | 'manifestsConfigMap';

/** Every source kind, in the order versions are combined. */
export const SOURCE_KINDS: readonly SourceKind[] = [
  'pullSecret',
  'clusterTrustBundle',
  'configMap',
  'manifestsConfigMap',
];

/** Content version per source; undefined or absent = missing or not watched. */
export type SourceVersions = Readonly<Partial<Record<SourceKind, string | undefined>>>;

/** What the KCP holds right now, content only. */
export interface SourceSnapshot {
  /** undefined = missing. */
  readonly pullSecret?: V1Secret;
  /** undefined = missing or not configured. */
  readonly clusterTrustBundle?: ClusterTrustBundle;
  readonly configMap?: V1ConfigMap;
  /** undefined = missing or not watched. */
  readonly manifestsConfigMap?: V1ConfigMap;
  /** Content version per source (undefined if missing). */
  readonly versions: SourceVersions;
  /**
   * The sources watched. Absent: the pull Secret, the trust bundle and the webhook ConfigMap
   * (what every watcher watched before the manifests ConfigMap was a source).
   */
  readonly watched?: readonly SourceKind[];
  /** The set version: one digest over the content versions (content-hash.ts `sourceSetVersion`). */
  readonly version: string;
  /** The problems at the time of the snapshot; non-empty means "do not propagate". */
  readonly problems: readonly SourceProblem[];
}

/** A missing or invalid source. */
export interface SourceProblem {
  readonly source: SourceKind;
  /** What is wrong, naming fields and keys, never values. */
  readonly reason: string;
  readonly type: SourceProblemReason;
}

/** Watches the sources; see source-set.ts's file comment. */
export interface SourceWatcher {
  /** Starts the reflectors; resolves when all of them have synced. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Whether every reflector has synced and a baseline is known. */
  synced(): boolean;
  /**
   * Lists every source again from the API server; resolves once `snapshot()` reflects lists
   * started after this call (differences found are reported as changes, as any other). A
   * replica that gains leadership calls it before acting: its watches may lag behind after a
   * partition, and a lagging cache would propagate an old version. Call it after `start()`
   * resolved; rejects if stopped or `signal` aborts.
   */
  relist(signal?: AbortSignal): Promise<void>;
  snapshot(): SourceSnapshot;
  problems(): readonly SourceProblem[];
  /**
   * Called after each content change (coalescing is the consumer's job), with the kinds that
   * changed. Returns a function that removes the listener.
   */
  onChange(listener: (snapshot: SourceSnapshot, changed: readonly SourceKind[]) => void): () => void;
}

/** Settings of `createSourceWatcher` (source-set.ts). */
export interface SourceWatcherOptions {
  readonly kubeConfig: KubeConfig;
  /** Namespace of the pull Secret and the ConfigMaps (`kcp-system`). */
  readonly namespace: string;
  readonly pullSecretName: string;
  /** Not watched (and never a problem) when undefined. */
  readonly clusterTrustBundleName?: string;
  readonly configMapName: string;
  /** The ConfigMap key holding the webhook config (default `rt-bootstrapper-config.json`). */
  readonly configMapKey?: string;
  /**
   * KIM's manifests ConfigMap (key `manifests.yaml`); not watched (and never a problem) when
   * undefined. Annotate mode only: direct mode installs its own release and must not watch it.
   */
  readonly manifestsConfigMapName?: string;
  readonly logger: Logger;
  readonly metrics?: ControllerMetrics;
  readonly events?: EventRecorder;
}
