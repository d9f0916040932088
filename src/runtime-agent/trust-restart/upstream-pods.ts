/**
 * Pods stamped by an upstream install carry the hash annotation but not our label, so the
 * restarter's label-selected cache never sees them and they would never be restarted. On becoming
 * active and on every bundle change, one paged list of the Pods without our label (a page at a
 * time, nothing kept) finds those carrying the stamp and a projected volume of the bundle in
 * force, and labels them (a merge patch of `metadata.labels` alone): from then on they are in the
 * cache and judged like ours. Memory stays one page, whatever the cluster's size, and a page stays
 * within the list budget in bytes, whatever its Pods carry (../kube/list-budget.ts).
 */
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL } from '../../api/trust-stamp.js';
import type { ListerWatcher } from '../../kube/lister-watcher.js';
import { forEachPage } from '../../kube/pager.js';

/** A Pod as far as the scan reads it. */
export interface ScannedPod {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec?: {
    readonly volumes?: readonly {
      readonly projected?: {
        readonly sources?: readonly { readonly clusterTrustBundle?: { readonly name?: string } }[];
      };
    }[];
  };
}

/** The scan's label selector: the Pods our label does not name yet. */
export const UNLABELLED = `!${CTB_MOUNTED_LABEL}`;

/** Items of one page of the scan at most; its bytes are bounded too (../kube/list-budget.ts). */
export const SCAN_PAGE_SIZE = 500;

/**
 * Whether `pod` was stamped for the trust bundle without our label (pure): the hash annotation
 * and a projected volume of bundle `bundleName` (a copied annotation alone restarts nothing).
 */
export function stampedUpstream(pod: ScannedPod, bundleName: string): boolean {
  if (pod.metadata?.labels?.[CTB_MOUNTED_LABEL] !== undefined) return false;
  if (pod.metadata?.annotations?.[CTB_HASH_ANNOTATION] === undefined) return false;
  return (pod.spec?.volumes ?? []).some((v) =>
    (v.projected?.sources ?? []).some((s) => s.clusterTrustBundle?.name === bundleName),
  );
}

/** Settings of {@link labelUpstreamPods}. */
export interface UpstreamScan {
  readonly pods: ListerWatcher<ScannedPod>;
  /** The bundle in force (its name, as the configuration gives it). */
  readonly bundleName: string;
  /** Adds our label to one Pod. */
  readonly label: (namespace: string, name: string) => Promise<void>;
  readonly pageSize?: number;
  /** Bytes of one page's answer at most (default the list budget's). */
  readonly pageBytes?: number;
}

/** Lists the unlabelled Pods page by page and labels the upstream-stamped ones; returns how many. */
export async function labelUpstreamPods(s: UpstreamScan, signal: AbortSignal): Promise<number> {
  let labelled = 0;
  // An expired token starts over (the Pods labelled so far have left the selector).
  await forEachPage(
    s.pods,
    { pageSize: s.pageSize ?? SCAN_PAGE_SIZE, pageBytes: s.pageBytes, labelSelector: UNLABELLED },
    signal,
    async (page) => {
      for (const pod of page) {
        if (signal.aborted) return;
        if (!stampedUpstream(pod, s.bundleName)) continue;
        await s.label(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '');
        labelled++;
      }
    },
  );
  return labelled;
}
