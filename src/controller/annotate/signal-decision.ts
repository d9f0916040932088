/**
 * The annotate mode's decisions (pure): what to do with the source set given what was last
 * signalled, and what to do with one Runtime during a signal pass.
 *
 * A pass signals every selected Runtime that existed at the change (by its creation time), at
 * most once per set version: a Runtime that already carries the signal is skipped (KIM has not
 * consumed it yet, so it will reconcile anyway), and each written signal is stamped with the
 * version on the Runtime itself, so a restart in the middle of a pass resumes without signalling
 * anyone twice. Starting or stopping to watch a source (a flag changed) is not a change of
 * content: the recorded state is then compared with the sources it counted.
 */
import { FORCE_PATCH_RECONCILIATION, type Runtime } from '../../api/runtime.js';
import type { SkipReason } from '../controller-metrics.js';
import { sameCountedSources, sourceSetVersion } from '../sources/content-hash.js';
import type { SourceKind, SourceProblem, SourceVersions } from '../sources/source-watcher.js';

/** Where the signal goes: KIM's annotation (default) or a label of the same key (the seed's word). */
export type SignalKind = 'annotation' | 'label';

/** Stamped on each signalled Runtime: the source-set version it was signalled for. */
export const SIGNALLED_VERSION_ANNOTATION = 'rt-bootstrapper.kyma-project.io/signalled-version';

/** What the annotate mode keeps on the KCP between restarts and leaders. */
export interface SignalState {
  /** The set version being (or last) signalled. */
  readonly version: string;
  /** Runtimes created after this instant are not signalled for `version`. */
  readonly changeTime: string;
  readonly phase: 'Signalling' | 'Completed';
  readonly completedAt?: string;
  /** Per-source versions, for people reading the state. */
  readonly sources?: SourceVersions;
  /** The sources watched when `version` was recorded; absent: the three base sources. */
  readonly watched?: readonly SourceKind[];
}

/** A pass as it runs in memory. */
export interface SignalPass {
  readonly version: string;
  readonly changeTime: Date;
}

/** What to do with the source set. */
export type SourceAction =
  /** A source is missing or invalid: propagate nothing. */
  | { readonly kind: 'hold'; readonly problems: readonly SourceProblem[] }
  /**
   * Record the current set (even with problems) without signalling: nothing was ever recorded
   * (`first`), or the watched sources changed while the content did not (`watched-changed`).
   */
  | {
      readonly kind: 'baseline';
      readonly reason: 'first' | 'watched-changed';
      readonly state: SignalState;
    }
  /** The current set has been signalled completely. */
  | { readonly kind: 'idle'; readonly state: SignalState }
  /** Signal a (new or interrupted) pass; persist `state` first. */
  | {
      readonly kind: 'start';
      readonly state: SignalState;
      readonly pass: SignalPass;
      readonly resumed: boolean;
    }
  /** The pass for the current set is running. */
  | { readonly kind: 'continue' }
  /** Changes are still arriving (within the coalescing window): wait for them to settle. */
  | { readonly kind: 'settling' }
  /** The pass for the current set has handled every Runtime: persist `state`. */
  | { readonly kind: 'complete'; readonly state: SignalState };

/** Input of {@link decideSourceAction}. */
export interface SourceActionInput {
  readonly snapshot: {
    readonly version: string;
    readonly versions: SourceVersions;
    /** Absent: the three base sources (source-watcher.ts). */
    readonly watched?: readonly SourceKind[];
    readonly problems: readonly SourceProblem[];
  };
  /** The persisted state; undefined if none was ever written. */
  readonly state: SignalState | undefined;
  /** The pass running in this process, with the number of Runtimes still to handle. */
  readonly activePass: { readonly version: string; readonly pending: number } | undefined;
  /** When this process last saw a content change; undefined if it saw none since it started. */
  readonly lastChangeAt: Date | undefined;
  /** Whether a burst of changes is still being coalesced (its end triggers a new evaluation). */
  readonly changePending: boolean;
  readonly now: Date;
}

/**
 * Whether the content is what `state` recorded. When the watched sources changed (a flag), the
 * versions are compared over the sources counted both then and now; the recorded per-source
 * versions are needed for that when a source stopped being counted.
 */
function sameContent(snapshot: SourceActionInput['snapshot'], state: SignalState): boolean {
  if (state.version === snapshot.version) return true;
  const now = snapshot.watched ?? [];
  const then = state.watched ?? [];
  if (sameCountedSources(now, then)) return false;
  const common = now.filter((kind) => then.includes(kind));
  const thenVersion = sameCountedSources(common, then)
    ? state.version
    : state.sources && sourceSetVersion(state.sources, common);
  return sourceSetVersion(snapshot.versions, common) === thenVersion;
}

/** Decides what to do with the current source set (level-based: only states are compared). */
export function decideSourceAction(i: SourceActionInput): SourceAction {
  const { snapshot, state, now } = i;
  const watched = snapshot.watched !== undefined ? { watched: snapshot.watched } : {};
  const record = (reason: 'first' | 'watched-changed', from?: SignalState): SourceAction => ({
    kind: 'baseline',
    reason,
    state: {
      version: snapshot.version,
      changeTime: from?.changeTime ?? now.toISOString(),
      phase: 'Completed',
      completedAt: from?.completedAt ?? now.toISOString(),
      sources: snapshot.versions,
      ...watched,
    },
  });
  // The first evaluation ever records what the KCP holds, usable or not: if a source is still
  // missing at install, its later creation is then a change, and is signalled.
  if (state === undefined) return record('first');
  const unchanged = sameContent(snapshot, state);
  // A source watched since (or no longer) with the content as recorded is no change: recorded
  // anew, even with problems, so its later creation or fix is a change like any other.
  if (unchanged && state.version !== snapshot.version && state.phase === 'Completed')
    return record('watched-changed', state);
  if (snapshot.problems.length > 0) return { kind: 'hold', problems: snapshot.problems };
  if (unchanged) {
    if (state.phase === 'Completed') return { kind: 'idle', state };
    if (i.activePass?.version === state.version) {
      if (i.activePass.pending > 0) return { kind: 'continue' };
      return { kind: 'complete', state: { ...state, phase: 'Completed', completedAt: now.toISOString() } };
    }
    // Persisted as signalling but not running here: a restart or a new leader resumes it
    // (under its recorded version; a watched-sources change is recorded once it completed).
    const changeTime = parseTime(state.changeTime) ?? now;
    return {
      kind: 'start',
      state,
      pass: { version: state.version, changeTime },
      resumed: true,
    };
  }
  // Resyncs must not cut a burst short: the coalescer evaluates again once it is quiet.
  if (i.changePending) return { kind: 'settling' };
  // A change while nobody watched (restart, no leader) dates from now: at worst a Runtime
  // created meanwhile is signalled once more than needed, never one less.
  const changeTime = i.lastChangeAt ?? now;
  return {
    kind: 'start',
    state: {
      version: snapshot.version,
      changeTime: changeTime.toISOString(),
      phase: 'Signalling',
      sources: snapshot.versions,
      ...watched,
    },
    pass: { version: snapshot.version, changeTime },
    resumed: false,
  };
}

function parseTime(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/** What to do with one Runtime of a pass. */
export type RuntimeDecision =
  { readonly kind: 'signal' } | { readonly kind: 'skip'; readonly reason: SkipReason };

/** Whether `runtime` carries the signal of kind `signal`. */
export function carriesSignal(runtime: Runtime, signal: SignalKind): boolean {
  const map = signal === 'annotation' ? runtime.metadata?.annotations : runtime.metadata?.labels;
  return map?.[FORCE_PATCH_RECONCILIATION] === 'true';
}

/**
 * Whether the Runtime existed at the change. Creation times have second precision, so a
 * Runtime created in the second of the change counts as existing: it may have been provisioned
 * with the old configuration.
 */
export function existedAt(runtime: Runtime, changeTime: Date): boolean {
  const created = runtime.metadata?.creationTimestamp as unknown;
  const ms =
    created instanceof Date ? created.getTime() : typeof created === 'string' ? Date.parse(created) : NaN;
  if (Number.isNaN(ms)) return true; // unknown: signalling once too often is the safe side
  return Math.floor(ms / 1000) <= Math.floor(changeTime.getTime() / 1000);
}

/** Decides about one Runtime during `pass`; undefined `runtime` means it is gone. */
export function decideRuntimeSignal(
  runtime: Runtime | undefined,
  pass: SignalPass,
  signal: SignalKind,
): RuntimeDecision {
  if (runtime === undefined) return { kind: 'skip', reason: 'gone' };
  if (runtime.metadata?.deletionTimestamp !== undefined) return { kind: 'skip', reason: 'gone' };
  if (runtime.metadata?.annotations?.[SIGNALLED_VERSION_ANNOTATION] === pass.version)
    return { kind: 'skip', reason: 'up_to_date' };
  if (carriesSignal(runtime, signal)) return { kind: 'skip', reason: 'already_signalled' };
  if (!existedAt(runtime, pass.changeTime)) return { kind: 'skip', reason: 'created_after_change' };
  return { kind: 'signal' };
}

/** The JSON merge patch that signals a Runtime for `version`. */
export function signalPatch(version: string, signal: SignalKind): object {
  const stamp = { [SIGNALLED_VERSION_ANNOTATION]: version };
  return signal === 'annotation'
    ? { metadata: { annotations: { [FORCE_PATCH_RECONCILIATION]: 'true', ...stamp } } }
    : { metadata: { labels: { [FORCE_PATCH_RECONCILIATION]: 'true' }, annotations: stamp } };
}
