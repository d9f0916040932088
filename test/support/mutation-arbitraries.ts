/**
 * The fast-check generators of the webhook core's inputs: the property tests of mutatePod
 * (test/unit/mutation/pipeline.property.test.ts) run them by the thousand, and the admission
 * policy's differential test (test/integration/admission-policy-differential.test.ts) creates a
 * fixed sample of them through a real API server.
 */
import fc from 'fast-check';
import { parseWebhookConfig, type WebhookConfig } from '../../src/api/webhook-config.js';
import {
  ANNOTATION_DEFAULTED,
  ANNOTATION_MODIFIED,
  FEATURE_ALL,
  FEATURE_KEYS,
  type FeatureKey,
} from '../../src/api/webhook-features.js';
import type { ClusterTrustBundleConfig } from '../../src/api/trust-bundle-config.js';
import type { Container, EnvVar, Pod, Volume, VolumeMount } from '../../src/mutation/pod.js';
import { API_NOT_SERVED, MOUNT, trustBundleMount } from '../../src/api/trust-bundle-capability.js';
import { seedTrustBundle } from '../unit/mutation/support.js';

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
/** Pods of every shape the webhook meets, and some it never does. */
export const arbitraryPod: fc.Arbitrary<Pod> = fc.oneof(
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

/** Configs over the features, overrides (usable or not), exclusions, landscapes and trust bundles. */
export const arbitraryConfig: fc.Arbitrary<WebhookConfig> = fc
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
    exclusions: fc.subarray(
      [
        'nginx',
        'replace.me/kyma-project',
        'docker.io/team',
        'docker.io/team/*',
        'team/app:1',
        `ghcr.io/app@${DIGEST}`,
        'localhost:5000/app:latest',
        'library/nginx:e2e',
        'replace.me/app:1',
      ],
      { maxLength: 3 },
    ),
    landscape: fc.constantFrom(undefined, 'NS2', 'eu10'),
    trustBundle: fc.constantFrom(seedTrustBundle, customTrustBundle),
    defaults: fc.dictionary(fc.constantFrom('default', 'team'), featureSubset, { maxKeys: 2 }),
  })
  .map(({ available, overrides, exclusions, trustBundle, defaults, landscape }) => {
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
      overrideExclusions: exclusions,
    });
  });

/** One admission request to the webhook's core: Pod, config, operation, namespace, runtime. */
export const mutationRequest = fc.record({
  pod: arbitraryPod,
  other: arbitraryPod,
  config: arbitraryConfig,
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
