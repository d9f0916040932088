/**
 * Writes the workload-health report into the webhook's status ConfigMap under its own field
 * manager (../../api/workload-health.ts WORKLOAD_FIELD_MANAGER): the other replicas apply the
 * rest of that ConfigMap under theirs, and a server-side apply only removes fields its own manager
 * owned and no longer sends, so neither write takes away the other's keys.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import {
  REVISION_RULES_KEY,
  WORKLOADS_KEY,
  WORKLOAD_FIELD_MANAGER,
  writeWorkloads,
  type WorkloadHealthReport,
} from '../../api/workload-health.js';
import { applyConfigMapData } from '../../kube/apply.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';

/** Options of a {@link ReportWriter}. */
export interface ReportWriterOptions {
  readonly access: ClusterAccess;
  readonly target: { readonly namespace: string; readonly name: string };
  /** The report now (read when a write is due, so changes in between coalesce). */
  readonly report: () => WorkloadHealthReport;
  /** The rules of the revisions served (./revision-rules.ts), written beside the report. */
  readonly rules?: () => string;
  readonly logger: Logger;
  /** Least time between two writes (default 5 s). */
  readonly minGapMs?: number;
  /** First retry delay after a failed write, doubling up to `retryMaxMs` (default 1 s). */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /** Told the result of every write. */
  readonly onWrite?: (ok: boolean) => void;
}

/**
 * One write at a time, at most one per `minGapMs`, only when the report differs from the last
 * one written, retried with backoff. {@link ReportWriter.changed} after every change;
 * {@link ReportWriter.stop} ends it (a write in flight completes, nothing follows it).
 */
/** What one write carries. */
interface Snapshot {
  readonly report: WorkloadHealthReport;
  readonly rules: string | undefined;
}

export class ReportWriter {
  private written: Snapshot | undefined;
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private retryMs: number;
  private failing = false;
  private stopped = false;

  constructor(private readonly o: ReportWriterOptions) {
    this.retryMs = o.retryBaseMs ?? 1_000;
  }

  /** The report changed (or may have): write it when the gap, and any retry delay, allow. */
  changed(): void {
    if (this.stopped || this.timer !== undefined || this.writing !== undefined) return;
    const gap = this.o.minGapMs ?? 5_000;
    const delay = this.failing ? this.retryMs : Math.max(0, this.lastWriteAt + gap - performance.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.write().finally(() => {
        this.writing = undefined;
        // Whatever changed during the write (or the failed write itself) goes out next.
        if (!this.stopped && (this.failing || !isDeepStrictEqual(this.snapshot(), this.written)))
          this.changed();
      });
    }, delay);
    this.timer.unref();
  }

  /** The last report the API server took (undefined before the first write). */
  lastWritten(): WorkloadHealthReport | undefined {
    return this.written?.report;
  }

  private snapshot(): Snapshot {
    return { report: this.o.report(), rules: this.o.rules?.() };
  }

  /** No more writes; resolves once a write in flight has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
  }

  private async write(): Promise<void> {
    const snapshot = this.snapshot();
    const { report, rules } = snapshot;
    if (this.stopped || isDeepStrictEqual(snapshot, this.written)) return;
    try {
      await applyConfigMapData(
        this.o.access,
        this.o.target,
        { [WORKLOADS_KEY]: writeWorkloads(report), [REVISION_RULES_KEY]: rules },
        { fieldManager: WORKLOAD_FIELD_MANAGER },
      );
      this.written = snapshot;
      this.lastWriteAt = performance.now();
      this.failing = false;
      this.retryMs = this.o.retryBaseMs ?? 1_000;
      this.o.onWrite?.(true);
    } catch (err) {
      this.o.onWrite?.(false);
      this.o.logger.warn(
        { err, retryInMs: this.retryMs },
        'cannot write the workload-health report; retrying',
      );
      if (this.failing) this.retryMs = Math.min(this.retryMs * 2, this.o.retryMaxMs ?? 30_000);
      this.failing = true;
    }
  }
}
