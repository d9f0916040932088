/**
 * How the KCP learns how many Pods still run an old bundle (direct mode): the active restarter
 * writes {@link TRUST_STATUS_ANNOTATION} on the webhook Deployment, an object the KCP controller
 * already reads (its readiness check) with the access it already has; the value is read by
 * `readTrustStatus` (../api/trust-stamp.ts). An annotation changes no `generation`, so it never rolls the webhook,
 * and the Deployment is no drift-watched kind. Writes are throttled: at once for a new bundle or
 * when the count reaches zero, otherwise at most every `minGapMs`.
 */
import type { Logger } from 'pino';
import { WEBHOOK_DEPLOYMENT } from '../../api/runtime-names.js';
import {
  RESTARTER_FIELD_MANAGER,
  TRUST_STATUS_ANNOTATION,
  type TrustRestartStatus,
} from '../../api/trust-stamp.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { kubeRequest } from '../../kube/kube-request.js';

/** The counts of one pass (see `TrustRestartStatus`). */
export interface RestartCounts {
  readonly stalePods: number;
  readonly barePods: number;
  readonly optedOutPods: number;
}

/** Reports counts; see the file comment. */
export interface StatusReporter {
  report(bundleHash: string, counts: RestartCounts): void;
  /** Cancels a pending write. */
  stop(): void;
}

/** The annotation's value (pure). */
export function trustStatusValue(bundleHash: string, counts: RestartCounts, at: Date): string {
  const status: TrustRestartStatus = {
    bundle: bundleHash.slice(0, 12),
    stalePods: counts.stalePods,
    barePods: counts.barePods,
    optedOutPods: counts.optedOutPods,
    at: at.toISOString(),
  };
  return JSON.stringify(status);
}

/** Writes the status on Deployment `namespace`/`deployment` (default the webhook's). */
export function deploymentStatusReporter(o: {
  readonly access: ClusterAccess;
  readonly namespace: string;
  readonly deployment?: string;
  readonly logger: Logger;
  readonly minGapMs?: number;
}): StatusReporter {
  const gap = o.minGapMs ?? 30_000;
  const path = `/apis/apps/v1/namespaces/${encodeURIComponent(o.namespace)}/deployments/${encodeURIComponent(o.deployment ?? WEBHOOK_DEPLOYMENT)}`;
  let last: { hash: string; counts: RestartCounts; at: number } | undefined;
  let pending: { hash: string; counts: RestartCounts } | undefined;
  let timer: NodeJS.Timeout | undefined;
  const write = (hash: string, counts: RestartCounts): void => {
    last = { hash, counts, at: Date.now() };
    pending = undefined;
    kubeRequest(o.access, {
      method: 'PATCH',
      path,
      query: { fieldManager: RESTARTER_FIELD_MANAGER },
      body: {
        metadata: { annotations: { [TRUST_STATUS_ANNOTATION]: trustStatusValue(hash, counts, new Date()) } },
      },
      parseResponse: false,
    }).catch((err: unknown) => {
      o.logger.warn({ err }, 'cannot write the trust-restart status on the webhook Deployment');
    });
  };
  return {
    report(hash, counts) {
      const urgent =
        last === undefined || last.hash !== hash || (counts.stalePods === 0 && last.counts.stalePods !== 0);
      if (urgent || Date.now() - (last?.at ?? 0) >= gap) {
        if (timer) clearTimeout(timer);
        timer = undefined;
        write(hash, counts);
        return;
      }
      pending = { hash, counts };
      timer ??= setTimeout(
        () => {
          timer = undefined;
          if (pending) write(pending.hash, pending.counts);
        },
        Math.max(0, (last?.at ?? 0) + gap - Date.now()),
      );
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
