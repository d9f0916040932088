/**
 * The candidate set a rollout asks the first wave's webhooks to check before anyone gets it
 * (DESIGN §11, docs/rollout.md): what goes into the preflight Secret on a runtime, and whether a
 * target needs a preflight at all (pure).
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/managed-labels.js';
import { SET_VERSION_ANNOTATION } from '../../api/runtime-bootstrapper.js';
import { CONFIG_MAP_KEY } from '../../api/webhook-features.js';
import {
  PREFLIGHT_CONFIG_KEY,
  PREFLIGHT_DOCKER_CONFIG_KEY,
  PREFLIGHT_SECRET,
} from '../../api/workload-health.js';
import type { SyncSet } from './sync-set.js';

/** What a runtime's webhook checks: a candidate set's config text and pull credentials. */
export interface PreflightCandidate {
  /** The candidate's set version. */
  readonly version: string;
  /** The webhook configuration JSON, as the config ConfigMap would hold it. */
  readonly config: string;
  /** The pull Secret's `.dockerconfigjson`, base64 as in a Secret's data; absent without one. */
  readonly dockerConfig?: string;
}

const DOCKER_CONFIG = '.dockerconfigjson';

type WithData = KubernetesObject & { data?: Record<string, string> };

const dataOf = (set: SyncSet, kind: string): Readonly<Record<string, string>> =>
  set.objects.find((o): o is WithData => o.kind === kind)?.data ?? {};

/** The candidate of a set: its config text and its pull Secret's credentials. */
export function preflightCandidateOf(set: SyncSet): PreflightCandidate {
  return {
    version: set.version,
    config: dataOf(set, 'ConfigMap')[CONFIG_MAP_KEY] ?? '',
    dockerConfig: dataOf(set, 'Secret')[DOCKER_CONFIG],
  };
}

/**
 * Whether moving from `stable` to `target` can send a running image somewhere new or pull it with
 * other credentials: the overrides, their exclusions, the features (which decide what is
 * rewritten) or the pull Secret's content differ. A trust bundle or a failOpen change moves no
 * image. Without a stable set to compare with, it can.
 */
export function needsPreflight(target: SyncSet, stable: SyncSet | undefined): boolean {
  if (stable === undefined) return true;
  const a = target.config;
  const b = stable.config;
  return (
    !isDeepStrictEqual(a.overrides, b.overrides) ||
    !isDeepStrictEqual(a.overrideExclusions ?? [], b.overrideExclusions ?? []) ||
    !isDeepStrictEqual([...a.availableFeatures].sort(), [...b.availableFeatures].sort()) ||
    !isDeepStrictEqual(a.namespaceFeatures, b.namespaceFeatures) ||
    dataOf(target, 'Secret')[DOCKER_CONFIG] !== dataOf(stable, 'Secret')[DOCKER_CONFIG]
  );
}

/**
 * The preflight Secret on a runtime (`<namespace>/rt-bootstrapper-preflight`): a Secret since it
 * holds the candidate's pull credentials; labelled as ours, so an uninstall removes it with the rest.
 */
export function preflightSecret(candidate: PreflightCandidate, namespace: string): V1Secret {
  const data: Record<string, string> = {
    [PREFLIGHT_CONFIG_KEY]: Buffer.from(candidate.config).toString('base64'),
  };
  if (candidate.dockerConfig !== undefined) data[PREFLIGHT_DOCKER_CONFIG_KEY] = candidate.dockerConfig;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: PREFLIGHT_SECRET,
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      annotations: { [SET_VERSION_ANNOTATION]: candidate.version },
    },
    type: 'Opaque',
    data,
  };
}
