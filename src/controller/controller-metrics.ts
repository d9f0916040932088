/**
 * The controller's own Prometheus metrics (the work queue and reconcile families come from
 * `src/kube`). Labels are closed sets — source kinds, reasons, the lease name, a content
 * version (a digest, see content-hash.ts) — never object contents.
 */
import type { Counter, Gauge, Registry } from 'prom-client';
import { counterOn, gaugeOn } from '../telemetry/prom-metrics.js';

/** Why a source is not used. */
export type SourceProblemReason = 'missing' | 'invalid';

/** Why a Runtime in a signal pass was not written to. */
export type SkipReason = 'already_signalled' | 'up_to_date' | 'created_after_change' | 'gone';

/** Every metric of `rtb controller` besides the shared work-queue ones. */
export interface ControllerMetrics {
  /** Content changes seen per source (metadata-only updates and relists do not count). */
  readonly sourceChanges: Counter<'source'>;
  /** 1 while a source is missing or invalid, per source and reason. */
  readonly sourceProblems: Gauge<'source' | 'reason'>;
  /** Runtimes the annotate mode wrote the signal to. */
  readonly runtimesSignalled: Counter;
  /** Runtimes of a pass that needed no write, by reason. */
  readonly runtimesSkipped: Counter<'reason'>;
  /** Failed signal writes (each is retried with backoff). */
  readonly signalErrors: Counter;
  /** Signal passes started: `new` for a change, `resumed` after a restart or takeover. */
  readonly signalPasses: Counter<'kind'>;
  /** Runtimes of the current pass still to be handled. */
  readonly signalPending: Gauge;
  /** 1 for the source-set version whose pass completed last (an info metric). */
  readonly signalledVersion: Gauge<'version'>;
  /** Unix time (s) the last pass completed. */
  readonly lastSignalCompleted: Gauge;
  /** client-go's leader election gauge: 1 while this process holds the lease. */
  readonly leaderStatus: Gauge<'name'>;
}

/** Registers (or finds, on a second call) the controller metrics on `registry`. */
export function createControllerMetrics(registry: Registry): ControllerMetrics {
  return {
    sourceChanges: counterOn(registry, {
      name: 'rtb_controller_source_changes_total',
      help: 'Content changes of the watched sources, by source.',
      labelNames: ['source'],
    }),
    sourceProblems: gaugeOn(registry, {
      name: 'rtb_controller_source_problem',
      help: 'Whether a source is missing or invalid (1) and therefore not propagated, by source and reason.',
      labelNames: ['source', 'reason'],
    }),
    runtimesSignalled: counterOn(registry, {
      name: 'rtb_controller_runtimes_signalled_total',
      help: 'Runtimes signalled to KIM (annotate mode).',
      labelNames: [],
    }),
    runtimesSkipped: counterOn(registry, {
      name: 'rtb_controller_runtimes_skipped_total',
      help: 'Runtimes of a signal pass that needed no write, by reason.',
      labelNames: ['reason'],
    }),
    signalErrors: counterOn(registry, {
      name: 'rtb_controller_signal_errors_total',
      help: 'Failed writes of the signal to a Runtime (retried with backoff).',
      labelNames: [],
    }),
    signalPasses: counterOn(registry, {
      name: 'rtb_controller_signal_passes_total',
      help: 'Signal passes started: new (a source change) or resumed (after a restart or takeover).',
      labelNames: ['kind'],
    }),
    signalPending: gaugeOn(registry, {
      name: 'rtb_controller_signal_pending_runtimes',
      help: 'Runtimes of the current signal pass still to be handled.',
      labelNames: [],
    }),
    signalledVersion: gaugeOn(registry, {
      name: 'rtb_controller_signalled_version_info',
      help: 'The source-set version whose signal pass completed last (value 1).',
      labelNames: ['version'],
    }),
    lastSignalCompleted: gaugeOn(registry, {
      name: 'rtb_controller_last_signal_completed_timestamp_seconds',
      help: 'Unix time the last signal pass completed.',
      labelNames: [],
    }),
    leaderStatus: gaugeOn(registry, {
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.',
      labelNames: ['name'],
    }),
  };
}
