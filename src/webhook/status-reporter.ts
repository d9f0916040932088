import type { Logger } from 'pino';
import { isDeepStrictEqual } from 'node:util';
import { reportData, type WebhookStatusReport } from '../api/webhook-status.js';
import type { ConfigError } from '../api/webhook-config.js';
import { sameCapability, type TrustBundleCapability } from '../api/trust-bundle-capability.js';
import type { DriftForwarder } from '../drift/drift-forwarder.js';
import type { WatchEvent } from '../drift/watch-event.js';
import { applyConfigMapData } from '../kube/apply.js';
import type { ClusterAccess } from '../kube/cluster-access.js';

/** Field manager of the report (not the controller's: the two never write each other's objects). */
export const STATUS_FIELD_MANAGER = 'rt-bootstrapper-webhook';
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/**
 * Writes the webhook's report ConfigMap (../api/webhook-status.ts) whenever what it loaded or
 * refused, or its runtime's trust-bundle capability, changes: one write in flight, the latest
 * report wins, retried with backoff. Every replica writes the same report (they read the same
 * ConfigMap and probe the same API server), so they need no election. With the drift channel, a
 * write that carried a new trust-bundle finding is told to the KCP ({@link reportWrittenEvent}):
 * the KCP reads the finding at once rather than at its next full resync, and stops an admission
 * policy mounting the bundle where nodes cannot read it (docs/trust-bundle-api.md).
 */
export class WebhookStatusReporter {
  private report: WebhookStatusReport = {};
  private written: WebhookStatusReport | undefined;
  private writing = false;
  private retryMs = RETRY_MIN_MS;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /**
   * `kcp`: the drift channel to the KCP, where there is one; told of each trust-bundle finding
   * written (the first one of this process too: it cannot know what the ConfigMap held before).
   */
  constructor(
    private readonly access: ClusterAccess,
    private readonly target: { readonly namespace: string; readonly name: string },
    private readonly logger: Logger,
    private readonly kcp?: Pick<DriftForwarder, 'send'>,
  ) {}

  /**
   * The set version a ConfigMap's text was offered under (./set-revision.ts), and whether it was
   * taken or refused. Undefined: no set of the KCP's (or one not read whole yet), nothing to report.
   */
  offered(
    version: string | undefined,
    offer: { accepted: true } | { accepted: false; error: ConfigError },
  ): void {
    if (version === undefined) return;
    this.report = nextReport(this.report, version, offer);
    this.flush();
  }

  /** What the webhook found out about the trust-bundle mount on its runtime. */
  trustBundle(capability: TrustBundleCapability): void {
    this.report = { ...this.report, trustBundle: capability };
    this.flush();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private flush(): void {
    if (this.writing || this.stopped || isDeepStrictEqual(this.report, this.written)) return;
    this.writing = true;
    const report = this.report;
    void applyConfigMapData(this.access, this.target, reportData(report), {
      fieldManager: STATUS_FIELD_MANAGER,
    }).then(
      () => {
        const told = newFindingWritten(this.written, report);
        this.written = report;
        this.writing = false;
        // Only once stored: the pass the KCP runs for it reads the ConfigMap.
        if (told && !this.stopped) this.kcp?.send(reportWrittenEvent(this.target));
        this.retryMs = RETRY_MIN_MS;
        this.flush();
      },
      (error: unknown) => {
        this.writing = false;
        this.logger.warn({ err: error, retryInMs: this.retryMs }, 'cannot write the status report; retrying');
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.flush();
        }, this.retryMs);
        this.timer.unref();
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
      },
    );
  }
}

/**
 * The report after a ConfigMap of set `version` was offered (pure): taken (or the same text as in
 * force), it is what is served and any refusal is history; refused, the version served stays and
 * the refusal is added with its offending fields. The trust-bundle finding stays as it was.
 */
export function nextReport(
  report: WebhookStatusReport,
  version: string,
  offer: { accepted: true } | { accepted: false; error: ConfigError },
): WebhookStatusReport {
  // The runtime's trust-bundle capability does not depend on the configuration: it stays.
  const trust = report.trustBundle !== undefined ? { trustBundle: report.trustBundle } : {};
  if (offer.accepted) return { loadedVersion: version, ...trust };
  return {
    ...trust,
    loadedVersion: report.loadedVersion,
    refusedVersion: version,
    refusal: offer.error.issues
      .map((i) => `${i.path}: ${i.message}`)
      .join('; ')
      .slice(0, 2_000),
  };
}

/** Whether `next`, written over `written`, carries a trust-bundle finding not yet told to the KCP (pure). */
export function newFindingWritten(
  written: WebhookStatusReport | undefined,
  next: WebhookStatusReport,
): boolean {
  return next.trustBundle !== undefined && !sameCapability(next.trustBundle, written?.trustBundle);
}

/**
 * The drift event that tells the KCP the report ConfigMap `target` holds a new finding: the KCP
 * forces a full pass of this runtime, which reads it (../controller/direct/drift-repairs.ts).
 */
export function reportWrittenEvent(target: {
  readonly namespace: string;
  readonly name: string;
}): WatchEvent {
  return {
    watched: { Namespace: target.namespace, Name: target.name },
    watchedGvk: { group: '', version: 'v1', kind: 'ConfigMap' },
  };
}
