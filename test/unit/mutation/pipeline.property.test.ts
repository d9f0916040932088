import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ANNOTATION_DEFAULTED, ANNOTATION_MODIFIED, FEATURES } from '../../../src/api/webhook-features.js';
import { mutatePod, type MutatePodInput } from '../../../src/mutation/pipeline.js';
import type { Container, Pod } from '../../../src/mutation/pod.js';
import { applyOps, deepFreeze } from './support.js';
import { mutationRequest } from '../../support/mutation-arbitraries.js';
import { MOUNT, trustBundleMount } from '../../../src/api/trust-bundle-capability.js';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL } from '../../../src/api/trust-stamp.js';

type Request = typeof mutationRequest extends fc.Arbitrary<infer R> ? R : never;

/** As the webhook gets it: decoded from JSON (plain objects, no undefined members), frozen. */
function fromJson<T>(value: T): T {
  return deepFreeze(JSON.parse(JSON.stringify(value)) as T);
}

function toInput(r: Request): MutatePodInput {
  const input = fromJson(r.pod);
  const oldPod = r.oldPod === 'same' ? input : r.oldPod === 'other' ? fromJson(r.other) : undefined;
  return {
    pod: input,
    oldPod,
    operation: r.operation,
    subResource: r.subResource,
    namespace: r.namespace,
    config: r.config,
    pullSecretAvailable: r.pullSecretAvailable,
    trustBundleMount: r.mount,
  };
}

const IMAGE_PATH = /^\/spec\/(containers|initContainers|ephemeralContainers)\/\d+\/image$/;
const ANNOTATION_PATHS = [ANNOTATION_DEFAULTED, ANNOTATION_MODIFIED].map(
  (key) => `/metadata/annotations/${key.replace('/', '~1')}`,
);
const MARKS = { [ANNOTATION_DEFAULTED]: 'true', [ANNOTATION_MODIFIED]: 'true' };
// Fewer cases under mutation testing (scripts/mutation-test.mjs sets RTB_PROPERTY_RUNS), where
// every surviving mutant runs this file again.
const RUNS = { numRuns: Number(process.env.RTB_PROPERTY_RUNS ?? 1000) };

describe('mutatePod properties (fast-check)', () => {
  test('(a) applying the patch to the input yields the returned Pod; the input is untouched', () => {
    fc.assert(
      fc.property(mutationRequest, (r) => {
        const input = toInput(r);
        const result = mutatePod(input);
        assert.deepEqual(applyOps(input.pod, result.patch), result.pod);
        assert.deepEqual(input.pod, JSON.parse(JSON.stringify(r.pod)), 'input unchanged');
        if (result.patch.length === 0) {
          assert.equal(result.pod, input.pod);
        } else {
          assert.equal(result.pod.metadata?.annotations?.[ANNOTATION_DEFAULTED], 'true');
          assert.equal(result.pod.metadata.annotations[ANNOTATION_MODIFIED], 'true');
        }
        assert.ok(result.applied.every((f) => result.selected.includes(f)));
        assert.ok(result.selected.every((f) => FEATURES.includes(f)));
      }),
      RUNS,
    );
  });

  test('(b) a second pass over the mutated Pod yields no patch', () => {
    fc.assert(
      fc.property(mutationRequest, (r) => {
        const input = toInput(r);
        const first = mutatePod(input);
        const second = mutatePod({ ...input, pod: deepFreeze(first.pod) });
        assert.deepEqual(second.patch, [], `second pass after ${JSON.stringify(first.patch)}`);
      }),
      RUNS,
    );
  });

  test('(c) UPDATE never touches anything but images and the two marks', () => {
    fc.assert(
      fc.property(mutationRequest, (r) => {
        const input = toInput({ ...r, operation: 'UPDATE' });
        const result = mutatePod(input);
        for (const op of result.patch) {
          assert.notEqual(op.op, 'remove');
          if (op.op === 'remove') continue;
          if (IMAGE_PATH.test(op.path)) {
            assert.equal(typeof op.value, 'string');
          } else if (ANNOTATION_PATHS.includes(op.path)) {
            assert.equal(op.value, 'true');
          } else if (op.path === '/metadata/annotations') {
            assert.deepEqual(op.value, MARKS);
          } else if (op.path === '/metadata') {
            assert.deepEqual(op.value, { annotations: MARKS });
          } else {
            assert.fail(`UPDATE touched ${op.path}`);
          }
        }
        if (r.subResource === 'ephemeralcontainers') {
          assert.ok(
            result.patch.every(
              (op) => !IMAGE_PATH.test(op.path) || op.path.startsWith('/spec/ephemeralContainers/'),
            ),
          );
        }
      }),
      RUNS,
    );
  });

  test('(d) an UPDATE that changes no image yields no patch', () => {
    fc.assert(
      fc.property(mutationRequest, (r) => {
        const result = mutatePod(toInput({ ...r, operation: 'UPDATE', oldPod: 'same' }));
        assert.deepEqual(result.patch, []);
      }),
      RUNS,
    );
  });

  test('(e) where the runtime cannot take the mount: no volume, no mount, no stamp; a warning and a reason instead; the rest as with it', () => {
    const ours = (path: string): boolean =>
      path.startsWith('/spec/volumes') ||
      /\/volumeMounts(\/|$)/.test(path) ||
      path.includes(CTB_MOUNTED_LABEL.replace('/', '~1')) ||
      path.includes(CTB_HASH_ANNOTATION.replace('/', '~1'));
    fc.assert(
      fc.property(mutationRequest, (r) => {
        const off = trustBundleMount({ api: 'certificates.k8s.io/v1', projection: 'dropped' });
        if (off.mount) return;
        const on = mutatePod({ ...toInput(r), trustBundleMount: MOUNT });
        const result = mutatePod({ ...toInput(r), trustBundleMount: off });
        for (const op of result.patch) {
          assert.ok(!ours(op.path), `touched ${op.path}`);
          // A whole map or spec added at once holds none of ours either.
          const text = JSON.stringify('value' in op ? op.value : null);
          assert.ok(!text.includes(CTB_HASH_ANNOTATION) && !text.includes(CTB_MOUNTED_LABEL), op.path);
        }
        const wanted = on.applied.includes('rt-cfg.kyma-project.io/add-cluster-trust-bundle');
        if (wanted) {
          assert.equal(result.trustBundleSkipped, 'projection_dropped');
          assert.ok(result.warnings.includes(off.warning));
        }
        if (result.trustBundleSkipped !== undefined) assert.ok(result.warnings.includes(off.warning));
        // Images and environment come out the same with the mount or without it.
        const view = (p: Pod) =>
          (['containers', 'initContainers', 'ephemeralContainers'] as const).map((k) =>
            ((p.spec as Record<string, Container[] | undefined> | undefined)?.[k] ?? []).map((c) => [
              c.image,
              c.env,
            ]),
          );
        assert.deepEqual(view(result.pod), view(on.pod));
        assert.deepEqual(result.pod.spec?.imagePullSecrets, on.pod.spec?.imagePullSecrets);
      }),
      RUNS,
    );
  });
});
