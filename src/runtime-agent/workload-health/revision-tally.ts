/**
 * The per-revision counts of the Pods the follower sees (DESIGN §11), pure and bounded: one small
 * entry per existing Pod (its revision and three flags; never the Pod), per revision a few
 * counters and at most {@link MAX_FAILURE_SAMPLES} samples, and revisions without Pods only while
 * they are among the newest. A deleted Pod that failed stays counted in `failedPods` as a number:
 * its uid is forgotten with it.
 */
import {
  MAX_FAILURE_SAMPLES,
  MAX_RAN_ORIGINALS,
  MAX_REPORTED_REVISIONS,
  MAX_UNPROVEN_ORIGINALS,
  type RevisionHealth,
  type WorkloadFailureKind,
  type WorkloadFailureSample,
  type WorkloadHealthReport,
} from '../../api/workload-health.js';
import type { WorkloadFailure } from './pod-health.js';

/** What the tally is told about one Pod. */
export interface PodObservation {
  readonly uid: string;
  /** `namespace/name`, for samples. */
  readonly pod: string;
  readonly revision: string;
  /** The Pod's creationTimestamp (RFC 3339), when known: when its revision's first Pod came. */
  readonly createdAt?: string;
  readonly started: boolean;
  /** Change-caused failures now (./pod-health.ts). */
  readonly failures: readonly WorkloadFailure[];
  /** Keys of the original images of its containers that started (./original-key.ts). */
  readonly ran?: readonly string[];
}

/** Options of a {@link RevisionTally}. */
export interface RevisionTallyOptions {
  /** The clock of samples' `at` and of Pods without a creation time (default the system's). */
  readonly now?: () => Date;
  /** Revisions kept and reported (default {@link MAX_REPORTED_REVISIONS}). */
  readonly maxRevisions?: number;
}

interface PodEntry {
  revision: string;
  started: boolean;
  failing: boolean;
  /** Failed at some time under `revision`: counted in its `failedPods` while the Pod exists. */
  everFailed: boolean;
  /** Keys of the originals it failed on (counted once per Pod in the revision's `failedOn`). */
  failedOn?: Set<string>;
}

interface RevisionState {
  pods: number;
  started: number;
  failing: number;
  /** Existing Pods that ever failed. */
  failedLive: number;
  /** Deleted Pods that had failed. */
  failedGone: number;
  /** Failed Pods a previous follower counted that this one cannot tell apart ({@link RevisionTally.carryOver}). */
  carried: number;
  firstPodMs: number;
  firstPodAt: string | undefined;
  samples: WorkloadFailureSample[];
  sampleKeys: Set<string>;
  /** Keys of originals that started under it (at most {@link MAX_RAN_ORIGINALS}; kept when Pods go). */
  ran: Set<string>;
  /** Per original's key, the Pods that failed on it, ever (at most {@link MAX_FAILED_ORIGINALS} keys). */
  failedOn: Map<string, number>;
  /** Regressions a previous follower proved that this one cannot tell apart. */
  carriedRegressions: number;
}

/** Originals whose failed Pods are counted per revision; beyond, a failure is proven by none. */
export const MAX_FAILED_ORIGINALS = 64;

/** Per revision, the Pods changed under it: feed Pod changes, read a {@link WorkloadHealthReport}. */
export class RevisionTally {
  private readonly pods = new Map<string, PodEntry>();
  private readonly revisions = new Map<string, RevisionState>();
  private readonly now: () => Date;
  private readonly maxRevisions: number;

  constructor(o: RevisionTallyOptions = {}) {
    this.now = o.now ?? (() => new Date());
    this.maxRevisions = o.maxRevisions ?? MAX_REPORTED_REVISIONS;
  }

  /** Pods followed (existing ones). */
  get size(): number {
    return this.pods.size;
  }

  /** The uids of the Pods followed. */
  uids(): string[] {
    return [...this.pods.keys()];
  }

  /** Revisions held (at most the bound, plus those with existing Pods). */
  get revisionCount(): number {
    return this.revisions.size;
  }

  /**
   * A Pod was added or changed. Returns the kinds of its failures when it starts failing (it was
   * not failing before), for the failure counters; empty otherwise.
   */
  upsert(o: PodObservation): readonly WorkloadFailureKind[] {
    const old = this.pods.get(o.uid);
    if (old !== undefined && old.revision !== o.revision) this.delete(o.uid);
    const rev = this.revision(o.revision, o.createdAt);
    for (const key of o.ran ?? []) if (rev.ran.size < MAX_RAN_ORIGINALS) rev.ran.add(key);
    let entry = this.pods.get(o.uid);
    if (entry === undefined) {
      rev.pods++;
      entry = { revision: o.revision, started: false, failing: false, everFailed: false };
      this.pods.set(o.uid, entry);
      // Only now: a revision created without a Pod would be pruned at once.
      this.prune();
    }
    return this.update(entry, rev, o, o.failures.length > 0);
  }

  /** A Pod is gone; had it failed, it stays counted in its revision's `failedPods`. */
  delete(uid: string): void {
    const entry = this.pods.get(uid);
    if (entry === undefined) return;
    this.pods.delete(uid);
    const rev = this.revisions.get(entry.revision);
    if (rev === undefined) return;
    rev.pods--;
    if (entry.started) rev.started--;
    if (entry.failing) rev.failing--;
    if (entry.everFailed) {
      rev.failedLive--;
      rev.failedGone++;
    }
    this.prune();
  }

  /**
   * Takes over what a previous follower reported (another replica led before, or this one
   * before it lost the lead): its samples and first-Pod times, and its failed Pods beyond the
   * ones failing now (call after the Pods that exist now were fed: those were counted there too).
   */
  carryOver(previous: WorkloadHealthReport): void {
    const knownBefore = new Set(this.revisions.keys());
    for (const [name, health] of Object.entries(previous)) {
      const rev = this.revision(name, health.firstPodAt);
      for (const key of health.ran ?? []) if (rev.ran.size < MAX_RAN_ORIGINALS) rev.ran.add(key);
      for (const u of health.unproven ?? [])
        if (rev.failedOn.has(u.image) || rev.failedOn.size < MAX_FAILED_ORIGINALS)
          rev.failedOn.set(u.image, Math.max(rev.failedOn.get(u.image) ?? 0, u.pods));
    }
    // With every revision's originals known: what the previous follower proved beyond us.
    for (const [name, health] of Object.entries(previous)) {
      const rev = this.revisions.get(name);
      if (rev !== undefined)
        rev.carriedRegressions = Math.max(0, (health.regressions ?? 0) - this.proven(name, rev).pods);
    }
    for (const [name, health] of Object.entries(previous)) {
      const known = knownBefore.has(name);
      const rev = this.revision(name, health.firstPodAt);
      if (!known && health.firstPodAt === undefined) {
        // Unknown then, unknown now: the oldest, so it never pushes out a revision with a time.
        rev.firstPodMs = 0;
        rev.firstPodAt = undefined;
      }
      rev.carried = Math.max(0, health.failedPods - rev.failedLive - rev.failedGone);
      const ours = rev.samples;
      rev.samples = [];
      rev.sampleKeys = new Set();
      for (const s of [...health.samples, ...ours]) addSample(rev, s);
    }
    this.prune();
  }

  /** The report: the newest revisions by their first Pod, newest first. */
  report(): WorkloadHealthReport {
    const report: Record<string, RevisionHealth> = {};
    for (const [name, r] of this.newest()) {
      const failedPods = r.failedLive + r.failedGone + r.carried;
      const { pods: proven, unproven } = this.proven(name, r);
      report[name] = {
        pods: r.pods,
        started: r.started,
        failing: r.failing,
        failedPods,
        firstPodAt: r.firstPodAt,
        samples: r.samples.map((s) => ({ ...s })),
        regressions: Math.min(failedPods, proven + r.carriedRegressions),
        unproven,
        ran: [...r.ran],
      };
    }
    return report;
  }

  /**
   * The failures of revision `name` that are regressions proven here (DESIGN §14): Pods that
   * failed on an original image that started under another revision of this runtime. The rest,
   * most failed Pods first, for the KCP to prove against other runtimes.
   */
  private proven(
    name: string,
    r: RevisionState,
  ): { pods: number; unproven: { image: string; pods: number }[] } {
    let pods = 0;
    const unproven: { image: string; pods: number }[] = [];
    for (const [image, count] of r.failedOn) {
      let ranElsewhere = false;
      for (const [other, o] of this.revisions)
        if (other !== name && o.ran.has(image)) {
          ranElsewhere = true;
          break;
        }
      if (ranElsewhere) pods += count;
      else unproven.push({ image, pods: count });
    }
    unproven.sort((a, b) => b.pods - a.pods || (a.image < b.image ? -1 : a.image > b.image ? 1 : 0));
    return { pods, unproven: unproven.slice(0, MAX_UNPROVEN_ORIGINALS) };
  }

  private update(
    entry: PodEntry,
    rev: RevisionState,
    o: PodObservation,
    failing: boolean,
  ): readonly WorkloadFailureKind[] {
    if (entry.started !== o.started) {
      rev.started += o.started ? 1 : -1;
      entry.started = o.started;
    }
    const wasFailing = entry.failing;
    if (wasFailing !== failing) {
      rev.failing += failing ? 1 : -1;
      entry.failing = failing;
    }
    if (!failing) return [];
    if (!entry.everFailed) {
      entry.everFailed = true;
      rev.failedLive++;
    }
    for (const f of o.failures) {
      const key = f.original;
      if (key === undefined || entry.failedOn?.has(key) === true) continue;
      (entry.failedOn ??= new Set()).add(key);
      if (rev.failedOn.has(key) || rev.failedOn.size < MAX_FAILED_ORIGINALS)
        rev.failedOn.set(key, (rev.failedOn.get(key) ?? 0) + 1);
    }
    const at = this.now().toISOString();
    for (const f of o.failures) addSample(rev, sampleOf(f, o.pod, at));
    return wasFailing ? [] : [...new Set(o.failures.map((f) => f.kind))];
  }

  /** The state of revision `name`, created (and the bound kept) on first sight. */
  private revision(name: string, createdAt: string | undefined): RevisionState {
    const parsed = createdAt === undefined ? Number.NaN : Date.parse(createdAt);
    const ms = Number.isFinite(parsed) ? parsed : this.now().getTime();
    let rev = this.revisions.get(name);
    if (rev === undefined) {
      rev = {
        pods: 0,
        started: 0,
        failing: 0,
        failedLive: 0,
        failedGone: 0,
        carried: 0,
        firstPodMs: ms,
        firstPodAt: new Date(ms).toISOString(),
        samples: [],
        sampleKeys: new Set(),
        ran: new Set(),
        failedOn: new Map(),
        carriedRegressions: 0,
      };
      this.revisions.set(name, rev);
    } else if (ms < rev.firstPodMs || rev.firstPodAt === undefined) {
      rev.firstPodMs = ms;
      rev.firstPodAt = new Date(ms).toISOString();
    }
    return rev;
  }

  private newest(): [string, RevisionState][] {
    return [...this.revisions]
      .sort(([an, a], [bn, b]) => b.firstPodMs - a.firstPodMs || (an < bn ? 1 : an > bn ? -1 : 0))
      .slice(0, this.maxRevisions);
  }

  /** Drops revisions without Pods that are not among the newest. */
  private prune(): void {
    if (this.revisions.size <= this.maxRevisions) return;
    const keep = new Set(this.newest().map(([name]) => name));
    for (const [name, r] of this.revisions) if (r.pods === 0 && !keep.has(name)) this.revisions.delete(name);
  }
}

/**
 * Samples differ by what a reader acts on: the image and reason that fail (or, for a missing
 * Secret, the namespace), not which replica of a workload showed it first.
 */
function sampleKey(s: WorkloadFailureSample): string {
  const where = s.kind === 'pull-secret-missing' ? s.pod.slice(0, s.pod.indexOf('/')) : (s.image ?? s.pod);
  return `${s.kind}\u0000${where}\u0000${s.reason}`;
}

function addSample(rev: RevisionState, s: WorkloadFailureSample): void {
  if (rev.samples.length >= MAX_FAILURE_SAMPLES) return;
  const key = sampleKey(s);
  if (rev.sampleKeys.has(key)) return;
  rev.sampleKeys.add(key);
  rev.samples.push(s);
}

function sampleOf(f: WorkloadFailure, pod: string, at: string): WorkloadFailureSample {
  // The original's key is the report's business elsewhere (`unproven`), not a sample's.
  return {
    kind: f.kind,
    container: f.container,
    image: f.image,
    registry: f.registry,
    reason: f.reason,
    message: f.message,
    pod: pod.slice(0, 320),
    at,
  };
}
