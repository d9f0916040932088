// Shared helpers of the mutation unit tests (not a test file itself).
import assert from 'node:assert/strict';
import { applyPatch } from 'rfc6902';
import {
  parseWebhookConfig,
  type WebhookConfig,
  type WebhookConfigInput,
} from '../../../src/api/webhook-config.js';
import { FEATURE_ALL } from '../../../src/api/webhook-features.js';
import type { ClusterTrustBundleConfig } from '../../../src/api/trust-bundle-config.js';
import type { PodPatchBuilder } from '../../../src/mutation/manipulation.js';
import { mutatePod, type MutatePodInput, type MutatePodResult } from '../../../src/mutation/pipeline.js';
import { PatchBuilder, type PatchOperation } from '../../../src/mutation/patch-builder.js';
import type { EphemeralContainer, Pod } from '../../../src/mutation/pod.js';

/** Freezes a value and everything in it, so any write to it throws (ES modules are strict). */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}

/** Applies a patch to a deep copy of `doc` with rfc6902, failing on any operation error. */
export function applyOps<T>(doc: T, ops: readonly PatchOperation[]): T {
  const copy = structuredClone(doc);
  const results = applyPatch(copy, [...ops]);
  results.forEach((error, i) => {
    assert.equal(error, null, `operation ${i} ${JSON.stringify(ops[i])} failed: ${String(error)}`);
  });
  return copy;
}

/** Result of editing a Pod with one manipulation. */
export interface Edited<R> {
  readonly result: R;
  readonly pod: Pod;
  readonly patch: readonly PatchOperation[];
}

/**
 * Runs a manipulation on a frozen copy of `pod` and checks the two invariants every manipulation
 * has: the input is untouched (frozen, so a write would throw) and the patch reproduces the result.
 */
export function edit<R>(pod: Pod, manipulate: (builder: PodPatchBuilder) => R): Edited<R> {
  const input = deepFreeze(structuredClone(pod));
  const builder: PodPatchBuilder = new PatchBuilder(input);
  const result = manipulate(builder);
  assert.deepEqual(applyOps(input, builder.operations), builder.current, 'patch(input) equals the result');
  if (!builder.changed) assert.equal(builder.current, input, 'an unchanged Pod is the input itself');
  return { result, pod: builder.current, patch: builder.operations };
}

/** The seed's ClusterTrustBundle settings. */
export const seedTrustBundle: ClusterTrustBundleConfig = {
  name: 'rt-bootstrapper-k3d.test:ctb:1',
  certWritePath: 'kube-apiserver-serving.pem',
  volumeName: 'rt-bootstrapper-certs',
  volumeMountPath: '/etc/ssl/certs',
};

/** A parsed config with all features available and the seed's settings, adjusted by `patch`. */
export function makeConfig(patch: Partial<WebhookConfigInput> = {}): WebhookConfig {
  return parseWebhookConfig({
    overrides: { 'replace.me': 'ghcr.io' },
    clusterTrustBundle: seedTrustBundle,
    availableFeatures: [FEATURE_ALL],
    ...patch,
  });
}

/**
 * Runs mutatePod on a frozen copy of `input.pod` and checks what holds of every run: the patch
 * reproduces the returned Pod, and a Pod nothing changes is returned as it came.
 */
export function mutateChecked(input: MutatePodInput): MutatePodResult {
  const pod = deepFreeze(structuredClone(input.pod));
  const result = mutatePod({ ...input, pod });
  assert.deepEqual(applyOps(pod, result.patch), result.pod, 'patch(input) equals the returned Pod');
  if (result.patch.length === 0) assert.equal(result.pod, pod, 'an unchanged Pod is returned as it came');
  return result;
}

/** The `pods/ephemeralcontainers` UPDATE of `running` that adds `added` to its ephemeral containers. */
export function ephemeralUpdate(
  running: Pod,
  added: readonly EphemeralContainer[],
): Pick<MutatePodInput, 'pod' | 'oldPod' | 'operation' | 'subResource'> {
  const spec = running.spec ?? { containers: [] };
  return {
    pod: {
      ...running,
      spec: { ...spec, ephemeralContainers: [...(spec.ephemeralContainers ?? []), ...added] },
    },
    oldPod: running,
    operation: 'UPDATE',
    subResource: 'ephemeralcontainers',
  };
}
