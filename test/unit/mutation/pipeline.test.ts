import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { parseWebhookConfig } from '../../../src/api/webhook-config.js';
import {
  ANNOTATION_DEFAULTED,
  ANNOTATION_MODIFIED,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURE_SET_LANDSCAPE,
  FEATURES,
} from '../../../src/api/webhook-features.js';
import type { MutatePodInput, MutatePodResult } from '../../../src/mutation/pipeline.js';
import type { Pod } from '../../../src/mutation/pod.js';
import { ephemeralUpdate, makeConfig, mutateChecked } from './support.js';
import { API_NOT_SERVED, trustBundleMount } from '../../../src/api/trust-bundle-capability.js';

function fixture(name: string): string {
  return readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8');
}

const seedBefore = parse(fixture('seed-pod-before.yaml')) as Pod;
const seedAfter = parse(fixture('seed-pod-after.yaml')) as Pod;
const seedConfig = parseWebhookConfig(fixture('seed-config.json'));
// The seed's four features: set-landscape is not in the seed config.
const SEED_FEATURES = FEATURES.filter((f) => f !== FEATURE_SET_LANDSCAPE);
const MARKS = { [ANNOTATION_DEFAULTED]: 'true', [ANNOTATION_MODIFIED]: 'true' };

/** Runs mutatePod (namespace `default`, pull Secret available unless `input` says) through mutateChecked. */
const run = (
  input: Omit<MutatePodInput, 'namespace' | 'pullSecretAvailable'> & Partial<MutatePodInput>,
): MutatePodResult => mutateChecked({ namespace: { name: 'default' }, pullSecretAvailable: true, ...input });

const plainPod: Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'team' },
  spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] },
};

/** Each operation of a result's patch as `op path`. */
const opsOf = (result: MutatePodResult): string[] => result.patch.map((op) => `${op.op} ${op.path}`);

describe('mutatePod: a runtime that cannot take the trust-bundle mount', () => {
  test('the seed Pod gets everything but the trust bundle, and a warning saying why', () => {
    for (const capability of [
      { api: 'certificates.k8s.io/v1', projection: 'dropped' as const },
      { api: API_NOT_SERVED, projection: 'unknown' as const },
    ]) {
      const mount = trustBundleMount(capability);
      assert.ok(!mount.mount);
      const result = run({
        pod: seedBefore,
        operation: 'CREATE',
        config: seedConfig,
        trustBundleMount: mount,
      });
      assert.equal(result.pod.spec?.volumes, undefined, 'no volume');
      assert.ok(
        result.pod.spec?.containers.every((c) => c.volumeMounts === undefined),
        'no mount',
      );
      assert.equal(result.pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/ctb-hash'], undefined);
      assert.equal(result.pod.metadata?.labels?.['rt-bootstrapper.kyma-project.io/ctb-mounted'], undefined);
      assert.deepEqual(result.warnings, [mount.warning]);
      assert.equal(result.trustBundleSkipped, mount.reason);
      assert.deepEqual(
        result.applied,
        SEED_FEATURES.filter((f) => f !== FEATURE_ADD_CLUSTER_TRUST_BUNDLE),
      );
      assert.equal(result.pod.spec?.containers[0]?.image, seedAfter.spec?.containers[0]?.image);
    }
  });

  test('a probe that found nothing for or against keeps the mount', () => {
    const mount = trustBundleMount({ api: 'certificates.k8s.io/v1beta1', projection: 'unknown' });
    const result = run({ pod: seedBefore, operation: 'CREATE', config: seedConfig, trustBundleMount: mount });
    assert.deepEqual(result.pod, seedAfter);
    assert.equal(result.trustBundleSkipped, undefined);
  });
});

describe('mutatePod: the seed example', () => {
  test("the seed Pod comes out exactly as the seed says (plus upstream's legacy FIPS env and mark)", () => {
    const result = run({ pod: seedBefore, operation: 'CREATE', config: seedConfig });
    assert.deepEqual(result.pod, seedAfter);
    assert.deepEqual(result.applied, SEED_FEATURES);
    assert.deepEqual(result.selected, SEED_FEATURES);
    assert.deepEqual(result.warnings, []);
    assert.equal(result.pullSecretSkipped, false);
  });

  test('the seed patch: precise operations, annotation key escaped', () => {
    const result = run({ pod: seedBefore, operation: 'CREATE', config: seedConfig });
    assert.deepEqual(opsOf(result), [
      'replace /spec/containers/0/image',
      'add /spec/imagePullSecrets',
      'add /spec/containers/0/env',
      'add /spec/volumes',
      'add /spec/containers/0/volumeMounts',
      'add /metadata/labels/rt-bootstrapper.kyma-project.io~1ctb-mounted',
      'add /metadata/annotations/rt-bootstrapper.kyma-project.io~1defaulted',
      'add /metadata/annotations/rt-bootstrapper.kyma-project.io~1modified',
    ]);
  });

  test('a second pass over the seed result changes nothing', () => {
    const again = run({ pod: seedAfter, operation: 'CREATE', config: seedConfig });
    assert.deepEqual(again.patch, []);
    assert.deepEqual(again.applied, []);
    assert.deepEqual(again.selected, SEED_FEATURES);
  });
});

describe('mutatePod: CREATE', () => {
  test('no feature selected: no patch, same object', () => {
    const result = run({ pod: plainPod, operation: 'CREATE', config: makeConfig() });
    assert.deepEqual(result.patch, []);
    assert.deepEqual(result.selected, []);
  });

  test('selected but nothing to change: no patch and no annotation', () => {
    const pod: Pod = { ...plainPod, spec: { containers: [{ name: 'app', image: 'ghcr.io/app:1' }] } };
    const result = run({
      pod,
      operation: 'CREATE',
      config: makeConfig({ namespaceFeatures: { team: [FEATURE_ALTER_IMG_REGISTRY] } }),
      namespace: { name: 'team' },
    });
    assert.deepEqual(result.patch, []);
    assert.deepEqual(result.selected, [FEATURE_ALTER_IMG_REGISTRY]);
  });

  test('a Pod without annotations gets the annotations object', () => {
    const result = run({
      pod: plainPod,
      operation: 'CREATE',
      config: makeConfig({ namespaceFeatures: { team: [FEATURE_ALTER_IMG_REGISTRY] } }),
      namespace: { name: 'team' },
    });
    assert.deepEqual(result.patch, [
      { op: 'replace', path: '/spec/containers/0/image', value: 'ghcr.io/app:1' },
      { op: 'add', path: '/metadata/annotations', value: MARKS },
    ]);
  });

  test('a Pod without metadata gets metadata.annotations', () => {
    const result = run({
      pod: { spec: plainPod.spec },
      operation: 'CREATE',
      config: makeConfig(),
      namespace: { name: 'team', annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true' } },
    });
    assert.deepEqual(result.patch.at(-1), {
      op: 'add',
      path: '/metadata',
      value: { annotations: MARKS },
    });
  });

  test('existing marks are not rewritten; another value is replaced, a missing one added', () => {
    const annotated = (defaulted: string, modified?: string): Pod => ({
      ...plainPod,
      metadata: {
        name: 'p',
        annotations: {
          [ANNOTATION_DEFAULTED]: defaulted,
          ...(modified === undefined ? {} : { [ANNOTATION_MODIFIED]: modified }),
          [FEATURE_SET_FIPS_MODE]: 'true',
        },
      },
    });
    const same = run({ pod: annotated('true', 'true'), operation: 'CREATE', config: makeConfig() });
    assert.deepEqual(
      same.patch.map((op) => op.path),
      ['/spec/containers/0/env'],
    );
    const other = run({ pod: annotated('false'), operation: 'CREATE', config: makeConfig() });
    assert.deepEqual(other.patch.slice(-2), [
      {
        op: 'replace',
        path: '/metadata/annotations/rt-bootstrapper.kyma-project.io~1defaulted',
        value: 'true',
      },
      { op: 'add', path: '/metadata/annotations/rt-bootstrapper.kyma-project.io~1modified', value: 'true' },
    ]);
  });

  test('pull Secret unavailable: reported, the other features still applied', () => {
    const result = run({
      pod: seedBefore,
      operation: 'CREATE',
      config: seedConfig,
      pullSecretAvailable: false,
    });
    assert.equal(result.pullSecretSkipped, true);
    assert.equal(result.pod.spec?.imagePullSecrets, undefined);
    assert.deepEqual(result.applied, [
      FEATURE_ALTER_IMG_REGISTRY,
      FEATURE_SET_FIPS_MODE,
      FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
    ]);
    assert.match(result.warnings.join('\n'), /pull Secret "registry-credentials" is not available/);
  });

  test('the pull Secret name comes from the config', () => {
    const config = makeConfig({ imagePullSecret: { name: 'my-creds' } });
    const pod: Pod = { ...plainPod, metadata: { annotations: { [FEATURE_ADD_IMG_PULL_SECRET]: 'true' } } };
    const result = run({ pod, operation: 'CREATE', config });
    assert.deepEqual(result.pod.spec?.imagePullSecrets, [{ name: 'my-creds' }]);
  });

  test('the namespace of the request decides, empty meaning "default"', () => {
    const config = makeConfig({ namespaceFeatures: { default: [FEATURE_SET_FIPS_MODE] } });
    assert.deepEqual(run({ pod: plainPod, operation: 'CREATE', config, namespace: { name: '' } }).applied, [
      FEATURE_SET_FIPS_MODE,
    ]);
    assert.deepEqual(
      run({ pod: plainPod, operation: 'CREATE', config, namespace: { name: 'team' } }).applied,
      [],
    );
  });

  test('overrides that cannot take effect are skipped; the usable ones still apply', () => {
    const config = makeConfig({
      overrides: { nodot: 'ghcr.io', 'replace.me': 'mirror', 'quay.io': 'ghcr.io' },
    });
    const result = run({
      pod: {
        ...plainPod,
        metadata: { annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true' } },
        spec: {
          containers: [
            { name: 'a', image: 'replace.me/app:1' },
            { name: 'b', image: 'quay.io/app:1' },
            { name: 'c', image: 'nodot/app:1' },
          ],
        },
      },
      operation: 'CREATE',
      config,
    });
    assert.deepEqual(
      result.pod.spec?.containers.map((c) => c.image),
      ['replace.me/app:1', 'ghcr.io/app:1', 'nodot/app:1'],
    );
    assert.deepEqual(result.warnings, []);
  });

  test('an image with a digest algorithm runtimes do not know: left unchanged with a warning', () => {
    const pod: Pod = {
      ...plainPod,
      metadata: { annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true' } },
      spec: {
        containers: [
          { name: 'a', image: `replace.me/app@blake9:${'a'.repeat(64)}` },
          { name: 'b', image: 'replace.me/app:1' },
        ],
      },
    };
    const result = run({ pod, operation: 'CREATE', config: makeConfig() });
    assert.deepEqual(
      result.pod.spec?.containers.map((c) => c.image),
      [`replace.me/app@blake9:${'a'.repeat(64)}`, 'ghcr.io/app:1'],
    );
    assert.match(
      result.warnings.join('\n'),
      /containers\[0\] "a": image left unchanged: .*unsupported digest algorithm "blake9"/,
    );
  });

  test('set-landscape: KYMA_LANDSCAPE from the config in every container and init container', () => {
    const pod: Pod = {
      ...plainPod,
      metadata: { annotations: { [FEATURE_SET_LANDSCAPE]: 'true' } },
      spec: {
        initContainers: [{ name: 'i', image: 'busybox' }],
        containers: [{ name: 'a', image: 'nginx' }],
      },
    };
    const result = run({ pod, operation: 'CREATE', config: makeConfig({ landscape: 'NS2' }) });
    assert.deepEqual(result.applied, [FEATURE_SET_LANDSCAPE]);
    assert.deepEqual(result.pod.spec?.initContainers?.[0]?.env, [{ name: 'KYMA_LANDSCAPE', value: 'NS2' }]);
    assert.deepEqual(result.pod.spec.containers[0]?.env, [{ name: 'KYMA_LANDSCAPE', value: 'NS2' }]);
    assert.deepEqual(result.pod.metadata?.annotations, { [FEATURE_SET_LANDSCAPE]: 'true', ...MARKS });
  });

  test('set-landscape selected with no landscape known (a config read off a runtime): a warning', () => {
    const pod: Pod = { ...plainPod, metadata: { annotations: { [FEATURE_SET_LANDSCAPE]: 'true' } } };
    const result = run({ pod, operation: 'CREATE', config: makeConfig() });
    assert.deepEqual(result.patch, []);
    assert.match(result.warnings.join('\n'), /no landscape is known; KYMA_LANDSCAPE not set/);
  });

  test('trust bundle selected without clusterTrustBundle config: a warning', () => {
    const { clusterTrustBundle: _unused, ...rest } = makeConfig();
    const result = run({
      pod: { ...plainPod, metadata: { annotations: { [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]: 'true' } } },
      operation: 'CREATE',
      config: rest,
    });
    assert.deepEqual(result.patch, []);
    assert.match(result.warnings.join('\n'), /clusterTrustBundle is not configured/);
  });
});

describe('mutatePod: UPDATE and subresources', () => {
  const all = {
    [FEATURE_ALTER_IMG_REGISTRY]: 'true',
    [FEATURE_SET_FIPS_MODE]: 'true',
    'rt-cfg.kyma-project.io/all': 'true',
  };
  const running: Pod = {
    metadata: { name: 'p', annotations: all },
    spec: {
      containers: [{ name: 'app', image: 'replace.me/app:1' }],
      initContainers: [{ name: 'init', image: 'replace.me/init:1' }],
      ephemeralContainers: [{ name: 'dbg', image: 'replace.me/dbg:1' }],
    },
  };

  test('UPDATE without oldPod: only images of containers and init containers, plus the marks', () => {
    const result = run({ pod: running, operation: 'UPDATE', config: makeConfig() });
    assert.deepEqual(opsOf(result), [
      'replace /spec/containers/0/image',
      'replace /spec/initContainers/0/image',
      'add /metadata/annotations/rt-bootstrapper.kyma-project.io~1defaulted',
      'add /metadata/annotations/rt-bootstrapper.kyma-project.io~1modified',
    ]);
    assert.deepEqual(result.selected, [FEATURE_ALTER_IMG_REGISTRY]);
  });

  /** The patch operation that sets the image at `path` to `value`. */
  const imageReplaced = (path: string, value: string) => ({ op: 'replace', path, value });

  test('UPDATE that does not change images: nothing is rewritten (no container restarts)', () => {
    const result = run({ pod: running, oldPod: running, operation: 'UPDATE', config: makeConfig() });
    assert.deepEqual(result.patch, []);
  });

  test('UPDATE that changes an image: only that image is rewritten', () => {
    const updated: Pod = {
      ...running,
      spec: { ...running.spec!, containers: [{ name: 'app', image: 'replace.me/app:2' }] },
    };
    const result = run({ pod: updated, oldPod: running, operation: 'UPDATE', config: makeConfig() });
    assert.deepEqual(result.patch[0], imageReplaced('/spec/containers/0/image', 'ghcr.io/app:2'));
    assert.equal(result.patch.length, 3);
  });

  test('pods/ephemeralcontainers: only new ephemeral containers', () => {
    const result = run({
      ...ephemeralUpdate(running, [{ name: 'dbg2', image: 'replace.me/dbg:2' }]),
      config: makeConfig(),
    });
    assert.deepEqual(result.patch[0], imageReplaced('/spec/ephemeralContainers/1/image', 'ghcr.io/dbg:2'));
    assert.equal(result.patch.length, 3);
  });

  test('other subresources are never mutated', () => {
    const result = run({ pod: running, operation: 'UPDATE', subResource: 'status', config: makeConfig() });
    assert.deepEqual(result.patch, []);
    assert.match(result.warnings.join('\n'), /subresource "status" is not mutated/);
  });
});

describe('mutatePod: a Pod without a spec object (never from the API server)', () => {
  const allFeatures = makeConfig({ namespaceFeatures: { team: ['rt-cfg.kyma-project.io/all'] } });
  const shapes: [string, unknown, unknown][] = [
    ['spec null', null, { name: 'p' }],
    ['no spec', undefined, { name: 'p' }],
    ['spec an array', [], { name: 'p' }],
    ['spec a string', 'x', { name: 'p' }],
    ['metadata null', { containers: [{ name: 'app', image: 'replace.me/app:1' }] }, null],
  ];
  for (const [what, spec, metadata] of shapes) {
    test(`${what}: no patch at all (nothing replaces a whole spec or metadata), and a warning`, () => {
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata, spec } as unknown as Pod;
      for (const operation of ['CREATE', 'UPDATE'] as const) {
        const result = run({
          pod,
          operation,
          namespace: { name: 'team' },
          config: allFeatures,
        });
        assert.deepEqual(result.patch, []);
        assert.deepEqual(result.applied, []);
        assert.match(result.warnings.join('\n'), /not an object|no spec object/);
      }
    });
  }

  test('an empty spec object is still mutated (members are added inside it)', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: {} } as Pod;
    const result = run({ pod, operation: 'CREATE', namespace: { name: 'team' }, config: allFeatures });
    assert.ok(result.patch.length > 0);
    assert.ok(result.patch.every((op) => op.path !== '/spec' && op.path !== '/metadata'));
  });

  test('a Pod no feature applies to gets no warning either way', () => {
    const pod = { metadata: { name: 'p' }, spec: null } as unknown as Pod;
    const result = run({ pod, operation: 'CREATE', config: makeConfig({ availableFeatures: [] }) });
    assert.deepEqual(result.warnings, []);
  });
});

describe('mutatePod: scope, reports and the trust-bundle record', () => {
  const annotatedPod = (...features: string[]): Pod => ({
    ...plainPod,
    metadata: { name: 'p', annotations: Object.fromEntries(features.map((f) => [f, 'true'])) },
  });

  test('a Pod whose annotations are null (JSON allows it) is mutated as one without them', () => {
    const config = makeConfig();
    const spec = { containers: [{ name: 'app', image: 'replace.me/app:1' }] };
    const withNull = { ...plainPod, metadata: { name: 'p', annotations: null }, spec } as unknown as Pod;
    // The namespace asks for every feature; the Pod's own (absent) annotations say nothing.
    const namespace = { name: 'team', annotations: { [FEATURE_ALL]: 'true' } };
    const result = run({ pod: withNull, operation: 'CREATE', config, namespace });
    const without = run({
      pod: { ...plainPod, metadata: { name: 'p' }, spec },
      operation: 'CREATE',
      config,
      namespace,
    });
    assert.deepEqual(result.applied, without.applied);
    assert.ok(result.applied.length > 0, "the namespace's features apply");
    assert.deepEqual(result.pod, without.pod);
  });

  test('an empty subresource is the Pod itself: a CREATE is mutated in full', () => {
    const result = run({ pod: seedBefore, operation: 'CREATE', subResource: '', config: seedConfig });
    assert.deepEqual(result.pod, seedAfter);
    assert.deepEqual(result.applied, SEED_FEATURES);
    assert.deepEqual(result.warnings, []);
  });

  test('a CREATE rewrites every image, whatever oldPod says', () => {
    const pod: Pod = {
      ...annotatedPod(FEATURE_ALTER_IMG_REGISTRY),
      spec: {
        containers: [{ name: 'app', image: 'replace.me/app:1' }],
        ephemeralContainers: [{ name: 'dbg', image: 'replace.me/dbg:1' }],
      },
    };
    const result = run({ pod, oldPod: pod, operation: 'CREATE', config: makeConfig() });
    assert.deepEqual(
      result.patch.slice(0, 2).map((op) => `${op.op} ${op.path}`),
      ['replace /spec/containers/0/image', 'replace /spec/ephemeralContainers/0/image'],
    );
    assert.deepEqual(result.applied, [FEATURE_ALTER_IMG_REGISTRY]);
  });

  test('pullSecretSkipped is false wherever the pull Secret was not wanted', () => {
    const results = {
      'a subresource not mutated': run({
        pod: seedBefore,
        operation: 'UPDATE',
        subResource: 'status',
        config: seedConfig,
        pullSecretAvailable: false,
      }),
      'no feature selected': run({
        pod: plainPod,
        operation: 'CREATE',
        config: makeConfig(),
        pullSecretAvailable: false,
      }),
      'a Pod without spec': run({
        pod: { ...seedBefore, spec: null } as unknown as Pod,
        operation: 'CREATE',
        config: seedConfig,
        pullSecretAvailable: false,
      }),
      'another feature changed the Pod': run({
        pod: annotatedPod(FEATURE_SET_FIPS_MODE),
        operation: 'CREATE',
        config: makeConfig(),
        pullSecretAvailable: false,
      }),
      'another feature changed nothing': run({
        pod: {
          ...annotatedPod(FEATURE_ALTER_IMG_REGISTRY),
          spec: { containers: [{ name: 'a', image: 'nginx' }] },
        },
        operation: 'CREATE',
        config: makeConfig(),
        pullSecretAvailable: false,
      }),
    };
    for (const [what, result] of Object.entries(results)) assert.equal(result.pullSecretSkipped, false, what);
    assert.equal(results['another feature changed the Pod'].patch.length > 0, true);
  });

  test('overrides that cannot even be read: a warning, images left unchanged, the rest still applied', () => {
    const overrides = Object.defineProperty({}, 'replace.me', {
      enumerable: true,
      get(): never {
        throw new Error('boom');
      },
    }) as Record<string, string>;
    const result = run({
      pod: annotatedPod(FEATURE_ALTER_IMG_REGISTRY, FEATURE_SET_FIPS_MODE),
      operation: 'CREATE',
      config: { ...makeConfig(), overrides },
    });
    assert.deepEqual(result.warnings, ['overrides unusable, images left unchanged: boom']);
    assert.equal(result.pod.spec?.containers[0]?.image, 'replace.me/app:1');
    assert.deepEqual(result.applied, [FEATURE_SET_FIPS_MODE]);
    assert.deepEqual(result.selected, [FEATURE_ALTER_IMG_REGISTRY, FEATURE_SET_FIPS_MODE]);
  });

  test('the trust bundle is applied when the mount or only the stamp changed, not when neither did', () => {
    const imageOnly: Pod = {
      ...seedAfter,
      spec: {
        ...seedAfter.spec!,
        containers: seedAfter.spec!.containers.map((c) => ({ ...c, image: 'replace.me/app:1' })),
      },
    };
    const image = run({ pod: imageOnly, operation: 'CREATE', config: seedConfig });
    assert.deepEqual(image.applied, [FEATURE_ALTER_IMG_REGISTRY]);
    assert.deepEqual(
      image.patch.map((op) => op.path),
      ['/spec/containers/0/image'],
    );

    const { 'rt-bootstrapper.kyma-project.io/ctb-mounted': _label, ...labels } = seedAfter.metadata!.labels!;
    const unstamped: Pod = { ...seedAfter, metadata: { ...seedAfter.metadata, labels } };
    const stamp = run({ pod: unstamped, operation: 'CREATE', config: seedConfig });
    assert.deepEqual(stamp.applied, [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]);
    assert.deepEqual(stamp.pod, seedAfter);

    const hashed = run({
      pod: seedAfter,
      operation: 'CREATE',
      config: seedConfig,
      trustBundleHash: 'a'.repeat(64),
    });
    assert.deepEqual(hashed.applied, [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]);

    const unmounted: Pod = {
      ...seedAfter,
      spec: {
        ...seedAfter.spec!,
        containers: seedAfter.spec!.containers.map(({ volumeMounts: _mounts, ...c }) => c),
      },
    };
    const mount = run({ pod: unmounted, operation: 'CREATE', config: seedConfig });
    assert.deepEqual(mount.applied, [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]);
    assert.deepEqual(
      mount.patch.map((op) => `${op.op} ${op.path}`),
      ['add /spec/containers/0/volumeMounts'],
    );
  });
});
