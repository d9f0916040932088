import type { KubernetesObject } from '@kubernetes/client-node';
import { loadCrd } from './crds.js';

/** The RolloutPolicy CustomResourceDefinition, as shipped in config/crd/. */
export function rolloutPolicyCrd(): KubernetesObject {
  return loadCrd('rolloutpolicy.yaml');
}

/** The RolloutDecision CustomResourceDefinition (people's approvals, rejections, pauses, resumes). */
export function rolloutDecisionCrd(): KubernetesObject {
  return loadCrd('rolloutdecision.yaml');
}
