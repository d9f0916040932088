/**
 * The contract between the controller app and a mode (annotate, direct): the settings a mode
 * reads, the context it gets, and the handle it returns. Its own module so a mode depends on
 * the contract only, not on the app that runs it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Logger } from '../telemetry/logger.js';
import type { SignalKind } from './annotate/signal-decision.js';
import type { ControllerMetrics } from './controller-metrics.js';
import type { EventRecorder } from '../kube/event-recorder.js';
import type { SourceWatcher } from './sources/source-watcher.js';

/** Settings a mode reads (the CLI's flags). */
export interface ModeOptions {
  /** Narrows the Runtimes (label selector); all in the namespace when undefined. */
  readonly runtimeSelector?: string;
  /** Annotate mode: annotation (KIM's contract) or label (the seed's wording). */
  readonly signal: SignalKind;
  /** Quiet period that coalesces a burst of source changes into one signal pass. */
  readonly coalesceMs: number;
  /** Parallel writes to Runtimes. */
  readonly concurrency: number;
  /** Re-evaluate the sources this often even without events (a level-based safety net). */
  readonly resyncMs: number;
  /** ConfigMap in the namespace holding the controller's state. */
  readonly stateConfigMapName: string;
}

/**
 * Annotate mode's default of {@link ModeOptions.concurrency} (direct mode's is in
 * ./direct/direct-mode-options.ts). Here for the CLI, which shows it in `--help` without loading
 * the mode. Its writes are one PATCH of a Runtime on the KCP each, so ten at once signal a fleet
 * of thousands within tens of seconds (docs/figures.md, annotate scale).
 */
export const DEFAULT_ANNOTATE_CONCURRENCY = 10;

/** What a mode gets from the app. */
export interface ModeContext {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly sources: SourceWatcher;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly metrics: ControllerMetrics;
  readonly events: EventRecorder;
  /** Check before every write: false the moment leadership is lost or stopping began. */
  readonly isLeader: () => boolean;
  readonly options: ModeOptions;
  /** This process's identity (the Lease holder name). */
  readonly identity: string;
  /** Aborted when leadership is lost or the app stops (also while the mode is starting). */
  readonly signal: AbortSignal;
}

/** A running mode. */
export interface ModeHandle {
  stop(): Promise<void>;
}

/** Starts a mode; resolves when it runs. */
export type ModeStarter = (ctx: ModeContext) => Promise<ModeHandle>;
