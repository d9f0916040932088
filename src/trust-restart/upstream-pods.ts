/**
 * Pods stamped by an upstream install carry the hash annotation but not our label, so the
 * restarter's label-selected cache never sees them and they would never be restarted. On becoming
 * active and on every bundle change, one paged list of the Pods without our label (a page at a
 * time, nothing kept) finds those carrying the stamp and a projected volume of the bundle in
 * force, and labels them (a merge patch of `metadata.labels` alone): from then on they are in the
 * cache and judged like ours. Memory stays one page, whatever the cluster's size.
 */
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL } from '../api/trust-stamp.js';
import { isResourceExpired } from '../kube/kube-errors.js';
import type { ListerWatcher } from '../kube/lister-watcher.js';

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

/** Default page size of the scan. */
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
}

/** Lists the unlabelled Pods page by page and labels the upstream-stamped ones; returns how many. */
export async function labelUpstreamPods(s: UpstreamScan, signal: AbortSignal): Promise<number> {
  let labelled = 0;
  let cont: string | undefined;
  for (;;) {
    let page;
    try {
      page = await s.pods.list(
        {
          limit: s.pageSize ?? SCAN_PAGE_SIZE,
          labelSelector: UNLABELLED,
          continue: cont,
        },
        signal,
      );
    } catch (err) {
      // An expired token: start over (the Pods labelled so far have left the selector).
      if (cont === undefined || !isResourceExpired(err) || signal.aborted) throw err;
      cont = undefined;
      continue;
    }
    for (const pod of page.items) {
      if (signal.aborted) return labelled;
      if (!stampedUpstream(pod, s.bundleName)) continue;
      await s.label(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '');
      labelled++;
    }
    if (page.continue === undefined || page.continue === '') return labelled;
    cont = page.continue;
  }
}
