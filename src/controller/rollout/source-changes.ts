/**
 * What a target revision changes against the stable one (pure): what a wave's approval may be
 * asked for (docs/rollout.md, approvals). The split follows the preflight's: the overrides and the
 * features that decide what they rewrite move images; the pull credentials pull them.
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { SyncSet } from '../direct/sync-set.js';
import { SOURCE_CHANGES, type SourceChange } from './rollout-policy.js';

/** One side of the comparison: a revision's set (undefined when not consistent) and its release. */
export interface RevisionContent {
  readonly set: SyncSet | undefined;
  readonly releaseVersion: string;
}

type Fields = KubernetesObject & { data?: unknown; spec?: unknown };

const objectOf = (set: SyncSet, kind: string): Fields | undefined => set.objects.find((o) => o.kind === kind);

/** The config without what one of the other kinds of change covers. */
function restOf(set: SyncSet): Record<string, unknown> {
  const {
    overrides: _o,
    availableFeatures: _a,
    namespaceFeatures: _n,
    clusterTrustBundle: _c,
    imagePullSecret: _i,
    ...rest
  } = set.config;
  return rest;
}

/**
 * The kinds of change from `stable` to `target`, in {@link SOURCE_CHANGES}' order; undefined when
 * either set is not known (then every approval applies).
 */
export function changesBetween(
  target: RevisionContent,
  stable: RevisionContent | undefined,
): SourceChange[] | undefined {
  const t = target.set;
  const s = stable?.set;
  if (t === undefined || s === undefined || stable === undefined) return undefined;
  const differ = (a: unknown, b: unknown): boolean => !isDeepStrictEqual(a, b);
  const found = new Set<SourceChange>();
  if (
    differ(t.config.overrides, s.config.overrides) ||
    differ([...t.config.availableFeatures].sort(), [...s.config.availableFeatures].sort()) ||
    differ(t.config.namespaceFeatures, s.config.namespaceFeatures)
  )
    found.add('overrides');
  if (
    differ(objectOf(t, 'Secret')?.data, objectOf(s, 'Secret')?.data) ||
    differ(t.config.imagePullSecret, s.config.imagePullSecret)
  )
    found.add('pullCredentials');
  if (
    differ(objectOf(t, 'ClusterTrustBundle')?.spec, objectOf(s, 'ClusterTrustBundle')?.spec) ||
    differ(t.config.clusterTrustBundle, s.config.clusterTrustBundle)
  )
    found.add('trustBundle');
  if (differ(restOf(t), restOf(s))) found.add('config');
  if (target.releaseVersion !== stable.releaseVersion) found.add('webhookRelease');
  return SOURCE_CHANGES.filter((c) => found.has(c));
}
