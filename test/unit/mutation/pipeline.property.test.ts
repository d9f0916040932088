import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseWebhookConfig, type WebhookConfig } from '../../../src/api/webhook-config.js';
import {
  ANNOTATION_DEFAULTED,
  ANNOTATION_MODIFIED,
  FEATURE_ALL,
  FEATURE_KEYS,
  FEATURES,
  type FeatureKey,
} from '../../../src/api/webhook-features.js';
import type { ClusterTrustBundleConfig } from '../../../src/api/trust-bundle-config.js';
import { mutatePod, type MutatePodInput } from '../../../src/mutation/pipeline.js';
import type { Container, EnvVar, Pod, Volume, VolumeMount } from '../../../src/mutation/pod.js';
import { applyOps, deepFreeze, seedTrustBundle } from './support.js';
import { API_NOT_SERVED, MOUNT, trustBundleMount } from '../../../src/api/trust-bundle-capability.js';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL } from '../../../src/api/trust-stamp.js';

const DIGEST = `sha256:${'c'.repeat(64)}`;

const image = fc.oneof(
  {
    weight: 9,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          'replace.me/',
          'docker.io/',
          '',
          'ghcr.io/',
          'localhost:5000/',
          'mirror.example.com/dockerhub/',
          'quay.io/',
          'index.docker.io/',
        ),
        fc.constantFrom('app', 'team/app', 'library/nginx', 'kyma-project/rt-bootstrapper/pause'),
        fc.constantFrom('', ':1', ':e2e', `@${DIGEST}`, `:1@${DIGEST}`),
      )
      .map(([registry, repository, suffix]) => `${registry}${repository}${suffix}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      'replace.me/Bad:1',
      'a b',
      'replace.me/x@sha256:short',
      `replace.me/x@blake9:${'d'.repeat(64)}`,
    ),
  },
);

const envVar: fc.Arbitrary<EnvVar> = fc.record(
  {
    name: fc.constantFrom('KYMA_FIPS_MODE_ENABLED', 'FIPS_MODE_ENABLED', 'KYMA_LANDSCAPE', 'A', 'B'),
    value: fc.constantFrom('true', 'false', 'x'),
    valueFrom: fc.constant({ fieldRef: { fieldPath: 'metadata.name' } }),
  },
  { requiredKeys: ['name'] },
);

const volumeMount: fc.Arbitrary<VolumeMount> = fc.record(
  {
    name: fc.constantFrom('rt-bootstrapper-certs', 'data', 'ca'),
    mountPath: fc.constantFrom('/etc/ssl/certs', '/etc/ssl/certs/', '/data', '/etc/ssl', '/opt/ca'),
    readOnly: fc.boolean(),
  },
  { requiredKeys: ['name', 'mountPath'] },
);

const container = fc.record(
  {
    image,
    env: fc.array(envVar, { maxLength: 4 }),
    volumeMounts: fc.array(volumeMount, { maxLength: 3 }),
  },
  { requiredKeys: [] },
);

const containers = (prefix: string, minLength = 0): fc.Arbitrary<Container[]> =>
  fc
    .array(container, { minLength, maxLength: 3 })
    .map((list) => list.map((c, i) => ({ name: `${prefix}${i}`, ...c })));

const customTrustBundle: ClusterTrustBundleConfig = {
  name: 'other-bundle',
  certWritePath: 'ca.pem',
  volumeName: 'ca',
  volumeMountPath: '/opt/ca',
};

const volume: fc.Arbitrary<Volume> = fc.constantFrom<Volume>(
  {
    name: 'rt-bootstrapper-certs',
    projected: {
      defaultMode: 420,
      sources: [{ clusterTrustBundle: { name: seedTrustBundle.name, path: seedTrustBundle.certWritePath } }],
    },
  },
  { name: 'rt-bootstrapper-certs', emptyDir: {} },
  { name: 'data', emptyDir: {} },
  { name: 'ca', emptyDir: {} },
);

const annotationKeys = [...FEATURE_KEYS, ANNOTATION_DEFAULTED, ANNOTATION_MODIFIED, 'a/b~c', 'x'];
const annotations = fc.dictionary(
  fc.constantFrom(...annotationKeys),
  fc.constantFrom('true', 'false', 'maybe'),
  {
    maxKeys: 6,
  },
);

const metadata = fc.record({ name: fc.constant('p'), annotations }, { requiredKeys: [] });

// Mostly Pods with a spec and at least one container; now and then no spec at all.
const pod: fc.Arbitrary<Pod> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ metadata }, { requiredKeys: [] }) },
  {
    weight: 9,
    arbitrary: fc.record(
      {
        metadata: fc.record({ name: fc.constant('p'), annotations }, { requiredKeys: ['annotations'] }),
        spec: fc.record(
          {
            containers: containers('c', 1),
            initContainers: containers('i'),
            ephemeralContainers: containers('e'),
            volumes: fc.array(volume, { maxLength: 3 }),
            imagePullSecrets: fc.subarray([{ name: 'registry-credentials' }, { name: 'other' }]),
          },
          { requiredKeys: ['containers'] },
        ),
      },
      { requiredKeys: ['spec'] },
    ),
  },
);

const featureSubset = fc.subarray<FeatureKey>([...FEATURE_KEYS]);

const config: fc.Arbitrary<WebhookConfig> = fc
  .record({
    available: fc.oneof(
      { weight: 2, arbitrary: fc.constant([FEATURE_ALL]) },
      { weight: 3, arbitrary: featureSubset },
    ),
    overrides: fc.subarray([
      ['replace.me', 'ghcr.io'],
      ['docker.io', 'mirror.example.com/dockerhub'],
      ['localhost:5000', 'localhost:5001'],
      ['ghcr.io', 'quay.io'],
      ['index.docker.io', 'mirror.example.com/legacy'],
      ['nodot', 'ghcr.io'],
      ['quay.io', 'nodot'],
    ] as const),
    landscape: fc.constantFrom(undefined, 'NS2', 'eu10'),
    trustBundle: fc.constantFrom(seedTrustBundle, customTrustBundle),
    defaults: fc.dictionary(fc.constantFrom('default', 'team'), featureSubset, { maxKeys: 2 }),
  })
  .map(({ available, overrides, trustBundle, defaults, landscape }) => {
    const offered = new Set<FeatureKey>(available.includes(FEATURE_ALL) ? FEATURE_KEYS : available);
    const namespaceFeatures = Object.fromEntries(
      Object.entries(defaults).map(([ns, keys]) => [
        ns,
        keys.filter((k) => k === FEATURE_ALL || offered.has(k)),
      ]),
    );
    return parseWebhookConfig({
      overrides: Object.fromEntries(overrides),
      clusterTrustBundle: trustBundle,
      availableFeatures: available,
      namespaceFeatures,
      landscape,
    });
  });

const request = fc.record({
  pod,
  other: pod,
  config,
  operation: fc.constantFrom('CREATE' as const, 'UPDATE' as const),
  subResource: fc.constantFrom(undefined, undefined, undefined, 'ephemeralcontainers'),
  oldPod: fc.constantFrom('none', 'same', 'other'),
  namespace: fc.record({
    name: fc.constantFrom('default', 'team', ''),
    annotations: fc.dictionary(fc.constantFrom(...FEATURE_KEYS), fc.constantFrom('true', 'false'), {
      maxKeys: 3,
    }),
  }),
  pullSecretAvailable: fc.boolean(),
  // The runtime's capability: mostly none known (mount), else each finding.
  mount: fc.constantFrom(
    undefined,
    MOUNT,
    trustBundleMount({ api: 'certificates.k8s.io/v1', projection: 'dropped' }),
    trustBundleMount({ api: API_NOT_SERVED, projection: 'kept' }),
    trustBundleMount({ api: 'certificates.k8s.io/v1beta1', projection: 'unknown' }),
  ),
});

type Request = typeof request extends fc.Arbitrary<infer R> ? R : never;

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
      fc.property(request, (r) => {
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
      fc.property(request, (r) => {
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
      fc.property(request, (r) => {
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
      fc.property(request, (r) => {
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
      fc.property(request, (r) => {
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
