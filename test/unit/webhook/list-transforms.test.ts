// What the webhook's lists keep of each object: only what is read, and no value a tenant can make
// large beyond what its reader can use.
import type { V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ORIGINAL_IMAGES_ANNOTATION } from '../../../src/api/workload-health.js';
import { cachedNamespaceOf } from '../../../src/kube/cached-namespace.js';
import { MAX_IMAGE_CHARS, planPodOf } from '../../../src/runtime-agent/preflight/plan-pod.js';
import { planPreflight } from '../../../src/runtime-agent/preflight/preflight-plan.js';
import { slimPod, podFactsOf } from '../../../src/runtime-agent/trust-restart/pod-facts.js';
import { CTB_HASH_ANNOTATION } from '../../../src/api/trust-stamp.js';

const HUGE = 'x'.repeat(250_000);
const ALL = 'rt-cfg.kyma-project.io/all';

void describe('list transforms', () => {
  void test('a cached Namespace keeps its name, deletion and feature annotations, nothing else', () => {
    const ns = cachedNamespaceOf({
      metadata: {
        name: 'team',
        uid: 'u',
        resourceVersion: '5',
        deletionTimestamp: '2026-01-01T00:00:00Z' as unknown as Date,
        labels: { a: 'b' },
        annotations: { [ALL]: 'true', 'tenant/blob': HUGE },
        managedFields: [{ manager: 'kubectl' }],
      },
      status: { phase: 'Terminating' },
    });
    assert.deepEqual(ns, {
      metadata: {
        name: 'team',
        uid: 'u',
        resourceVersion: '5',
        deletionTimestamp: '2026-01-01T00:00:00Z',
        annotations: { [ALL]: 'true' },
      },
      status: { phase: 'Terminating' },
    });
    assert.ok(JSON.stringify(ns).length < 500);
  });

  void test("the preflight's Pod keeps what its plan reads, and the plan reads it as it read the whole Pod", () => {
    const pod: V1Pod = {
      metadata: {
        name: 'p',
        namespace: 'team',
        annotations: {
          [ALL]: 'true',
          'tenant/blob': HUGE,
          [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ app: 'docker.io/library/nginx:1' }),
        },
      },
      spec: {
        containers: [
          { name: 'app', image: 'mirror.example.com/library/nginx:1', env: [{ name: 'X', value: HUGE }] },
          { name: 'long', image: `docker.io/${'a'.repeat(MAX_IMAGE_CHARS)}` },
        ],
        initContainers: [{ name: 'init', image: 'docker.io/library/busybox:1' }],
      },
    };
    const slim = planPodOf(pod);
    assert.ok(JSON.stringify(slim).length < 2_000, 'the huge annotation, env and image are not kept');
    const config = {
      overrides: { 'docker.io': 'mirror.example.com' },
      availableFeatures: [ALL],
      namespaceFeatures: {},
    } as unknown as Parameters<typeof planPreflight>[0]['config'];
    const namespaces = [{ metadata: { name: 'team' } }];
    assert.deepEqual(
      planPreflight({ pods: [slim], namespaces, config }),
      planPreflight({ pods: [pod], namespaces, config }),
    );
  });

  void test("an original-images annotation too long to be ours is not kept: the container's image counts", () => {
    const slim = planPodOf({
      metadata: { namespace: 'team', annotations: { [ORIGINAL_IMAGES_ANNOTATION]: HUGE } },
      spec: { containers: [{ name: 'app', image: 'nginx' }] },
    });
    assert.equal(slim.metadata?.annotations, undefined);
  });

  void test("the restarter's Pod keeps a hash-sized stamp; a longer one reads as a stale stamp, not kept", () => {
    const short = slimPod({
      metadata: { name: 'p', annotations: { [CTB_HASH_ANNOTATION]: 'a'.repeat(64) } },
    });
    assert.equal(podFactsOf(short).hash, 'a'.repeat(64));
    const long = slimPod({ metadata: { name: 'p', annotations: { [CTB_HASH_ANNOTATION]: HUGE } } });
    const hash = podFactsOf(long).hash;
    assert.ok(hash !== undefined && hash.length < 100 && hash !== HUGE.slice(0, 64));
  });
});
