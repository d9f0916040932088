/**
 * The upstream Go implementation's own test cases, run through `rtb mutate`'s code
 * (previewMutation: the config read as the webhook reads it, then the webhook's pipeline), each
 * asserting upstream's expected result. Sources, in kyma-project/rt-bootstrapper:
 * internal/webhook/v1/pod_webhook_test.go, internal/webhook/v1/pod_defaulter_landscape_test.go and
 * the selection cases of pkg/api/v1/types_test.go. Where we deliberately differ, the case says
 * which entry of docs/upstream-differences.md applies and asserts our result instead.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { previewMutation } from '../../../src/cli/mutate-preview.js';
import type { Container, EnvVar, Pod } from '../../../src/mutation/pod.js';

const IMG = 'rt-cfg.kyma-project.io/alter-img-registry';
const PULL = 'rt-cfg.kyma-project.io/add-img-pull-secret';
const CTB = 'rt-cfg.kyma-project.io/add-cluster-trust-bundle';
const LAND = 'rt-cfg.kyma-project.io/set-landscape';
const ALL = 'rt-cfg.kyma-project.io/all';
const MODIFIED = 'rt-bootstrapper.kyma-project.io/modified';

const testPullSecret = 'test-pull-secret';
// Upstream's fixture target is "test-registry", which runtimes read as a Docker Hub namespace; we
// never rewrite to such a target (difference 4, tested below), so the cases use a registry host.
const testRegistry = 'test-registry.io';
const overrides = { 'test.com': testRegistry, 'test.com:2000': testRegistry };
const ctbMapping = {
  name: 'test-ctb',
  certWritePath: 'ca.pem',
  volumeMountPath: '/etc/ssl/certs',
  volumeName: 'rt-bootstrapper-certs',
};

/** getTestPod of pod_webhook_test.go. */
function getTestPod(annotations?: Record<string, string>, namespace?: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...(annotations ? { annotations } : {}), ...(namespace ? { namespace } : {}) },
    spec: {
      containers: [{ image: 'test.com/me/plz:now' }, { image: 'test.com:2000/this/too:plz' }] as Container[],
    },
  };
}

/** makePod of pod_defaulter_landscape_test.go. */
function makeLandscapePod(annotations?: Record<string, string>, env?: EnvVar[]): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: annotations ? { annotations } : {},
    spec: {
      initContainers: [{ name: 'init', image: 'busybox' }],
      containers: [{ name: 'main', image: 'nginx', ...(env ? { env } : {}) }],
    },
  };
}

interface Case {
  readonly name: string;
  readonly source: 'pod_webhook_test.go' | 'pod_defaulter_landscape_test.go' | 'types_test.go';
  readonly config: Record<string, unknown>;
  readonly pod: Pod;
  readonly namespaceAnnotations?: Record<string, string>;
  readonly landscape?: string;
  /** Upstream's expectations (or ours, where `difference` names the deliberate difference). */
  readonly expect: (mutated: Pod, input: Pod) => void;
  readonly difference?: string;
}

const images = (pod: Pod): (string | undefined)[] => pod.spec?.containers.map((c) => c.image) ?? [];
const alteredImages = [`${testRegistry}/me/plz:now`, `${testRegistry}/this/too:plz`];
const hasPullSecret = (pod: Pod): boolean =>
  (pod.spec?.imagePullSecrets ?? []).some((r) => r.name === testPullSecret);
const landscapeEnv = (value: string): EnvVar => ({ name: 'KYMA_LANDSCAPE', value });
const allContainers = (pod: Pod): Container[] => [
  ...(pod.spec?.initContainers ?? []),
  ...(pod.spec?.containers ?? []),
];

/** What every case of pod_defaulter_landscape_test.go shares: the landscape feature alone. */
const landscapeCase = {
  source: 'pod_defaulter_landscape_test.go',
  config: { overrides: { x: 'y' }, availableFeatures: [LAND] },
} as const;
/** The single container's env is exactly KYMA_LANDSCAPE=NS2. */
const setsNs2 = (pod: Pod): void => {
  assert.deepEqual(pod.spec?.containers[0]?.env, [landscapeEnv('NS2')]);
};

const webhookConfig = {
  namespaceFeatures: {},
  overrides,
  availableFeatures: [IMG, PULL],
  imagePullSecret: { name: testPullSecret },
};
const ctbConfig = {
  namespaceFeatures: {},
  overrides: {},
  clusterTrustBundle: ctbMapping,
  availableFeatures: [CTB],
};

const cases: readonly Case[] = [
  // pod_webhook_test.go, "When creating Pod under Defaulting Webhook"
  {
    name: 'Should alter image registry',
    source: 'pod_webhook_test.go',
    config: webhookConfig,
    pod: getTestPod({ [IMG]: 'true' }),
    expect: (pod) => {
      assert.deepEqual(images(pod), alteredImages);
    },
  },
  {
    name: 'Should add image pull secret',
    source: 'pod_webhook_test.go',
    config: webhookConfig,
    pod: getTestPod({ [PULL]: 'true' }),
    expect: (pod) => {
      assert.ok(hasPullSecret(pod));
    },
  },
  {
    name: 'Should opt in both defaulters from namespaceFeatures all alias without pod annotations',
    source: 'pod_webhook_test.go',
    config: { ...webhookConfig, namespaceFeatures: { 'kyma-system': [ALL] } },
    pod: getTestPod(undefined, 'kyma-system'),
    expect: (pod) => {
      assert.deepEqual(images(pod), alteredImages);
      assert.ok(hasPullSecret(pod));
    },
  },
  {
    name: 'Should opt in both defaulters from pod annotation rt-cfg all alias',
    source: 'pod_webhook_test.go',
    config: { overrides, availableFeatures: [IMG, PULL], imagePullSecret: { name: testPullSecret } },
    pod: getTestPod({ [ALL]: 'true' }),
    expect: (pod) => {
      assert.deepEqual(images(pod), alteredImages);
      assert.ok(hasPullSecret(pod));
    },
  },
  {
    name: 'Should inject landscape env var',
    source: 'pod_webhook_test.go',
    config: { namespaceFeatures: {}, overrides, availableFeatures: [LAND] },
    landscape: 'NS2',
    pod: getTestPod({ [LAND]: 'true' }),
    expect: (pod) => {
      for (const c of pod.spec?.containers ?? [])
        assert.ok(c.env?.some((e) => e.name === 'KYMA_LANDSCAPE' && e.value === 'NS2'));
      assert.equal(pod.metadata?.annotations?.[MODIFIED], 'true');
    },
  },
  // pod_webhook_test.go, "ClusterTrustBundle annotation values"
  {
    name: "Should mount CTB when annotation is 'true'",
    source: 'pod_webhook_test.go',
    config: ctbConfig,
    pod: getTestPod({ [CTB]: 'true' }),
    expect: (pod) => {
      assert.equal(pod.spec?.volumes?.length, 1);
      assert.equal(pod.spec.volumes[0]?.name, 'rt-bootstrapper-certs');
    },
  },
  {
    name: "Should mount CTB when annotation is 'restart-on-change'",
    source: 'pod_webhook_test.go',
    difference: 'restart-on-change',
    config: ctbConfig,
    pod: getTestPod({ [CTB]: 'restart-on-change' }),
    expect: (pod, input) => {
      assert.deepEqual(pod, input);
    },
  },
  {
    name: "Should NOT mount CTB when annotation is 'false'",
    source: 'pod_webhook_test.go',
    config: ctbConfig,
    pod: getTestPod({ [CTB]: 'false' }),
    expect: (pod) => {
      assert.equal(pod.spec?.volumes, undefined);
    },
  },
  {
    name: "Should NOT mount CTB when annotation is 'false' even with namespace defaults",
    source: 'pod_webhook_test.go',
    config: { ...ctbConfig, namespaceFeatures: { 'kyma-system': [CTB] } },
    pod: getTestPod({ [CTB]: 'false' }, 'kyma-system'),
    expect: (pod) => {
      assert.equal(pod.spec?.volumes, undefined);
    },
  },
  // pod_defaulter_landscape_test.go, TestSetLandscapeEnvVar (one container, through the whole webhook)
  {
    name: 'adds env var when not present',
    ...landscapeCase,
    landscape: 'NS2',
    pod: makeLandscapePod({ [LAND]: 'true' }),
    expect: setsNs2,
  },
  {
    name: 'no modification when env var already has correct value',
    ...landscapeCase,
    landscape: 'NS2',
    pod: {
      ...makeLandscapePod({ [LAND]: 'true' }),
      spec: { containers: [{ name: 'test', env: [landscapeEnv('NS2')] }] },
    },
    expect: (pod, input) => {
      assert.deepEqual(pod, input);
    },
  },
  {
    name: 'replaces env var when value differs',
    ...landscapeCase,
    landscape: 'NS2',
    pod: makeLandscapePod({ [LAND]: 'true' }, [landscapeEnv('OLD')]),
    expect: setsNs2,
  },
  // pod_defaulter_landscape_test.go, TestBuildDefaulterSetLandscape
  {
    name: 'injects env var when annotation present and landscape non-empty',
    ...landscapeCase,
    landscape: 'NS2',
    pod: makeLandscapePod({ [LAND]: 'true' }),
    expect: (pod) => {
      for (const c of allContainers(pod))
        assert.ok(
          c.env?.some((e) => e.name === 'KYMA_LANDSCAPE' && e.value === 'NS2'),
          c.name,
        );
    },
  },
  {
    name: 'no injection when annotation absent',
    ...landscapeCase,
    landscape: 'NS2',
    pod: makeLandscapePod(),
    expect: (pod) => {
      for (const c of allContainers(pod)) assert.equal(c.env, undefined, c.name);
    },
  },
  {
    name: 'injection via namespace annotation',
    ...landscapeCase,
    landscape: 'CN',
    namespaceAnnotations: { [LAND]: 'true' },
    pod: makeLandscapePod(),
    expect: (pod) => {
      assert.ok(pod.spec?.containers[0]?.env?.some((e) => e.name === 'KYMA_LANDSCAPE' && e.value === 'CN'));
    },
  },
  // types_test.go: the selection rules (NamespaceDefaultFeatures, ExpandAnnotationAll) as Pods see them
  ...(['kyma-system', 'other', 'missing'] as const).map((namespace): Case => ({
    name: `TestConfig_NamespaceDefaultFeatures: namespace ${namespace}`,
    source: 'types_test.go',
    config: {
      overrides,
      availableFeatures: [IMG, PULL],
      namespaceFeatures: { 'kyma-system': [ALL, IMG], other: [PULL] },
      imagePullSecret: { name: testPullSecret },
    },
    pod: getTestPod(undefined, namespace),
    expect: (pod) => {
      assert.equal(images(pod)[0] === alteredImages[0], namespace === 'kyma-system');
      assert.equal(hasPullSecret(pod), namespace !== 'missing');
    },
  })),
  {
    name: 'TestConfig_ExpandAnnotationAll: all with explicit override preserved',
    source: 'types_test.go',
    config: { overrides, availableFeatures: [IMG, PULL], imagePullSecret: { name: testPullSecret } },
    pod: getTestPod({ [ALL]: 'true', [IMG]: 'false' }),
    expect: (pod) => {
      assert.deepEqual(images(pod), ['test.com/me/plz:now', 'test.com:2000/this/too:plz']);
      assert.ok(hasPullSecret(pod));
    },
  },
  {
    name: 'TestConfig_ExpandAnnotationAll: all not true unchanged',
    source: 'types_test.go',
    config: { overrides, availableFeatures: [IMG, PULL] },
    pod: getTestPod({ [ALL]: 'false' }),
    expect: (pod, input) => {
      assert.deepEqual(pod, input);
    },
  },
  {
    name: 'TestConfig_ExpandAnnotationAll_PreservesCTBValues: restart-on-change preserved over all expansion',
    source: 'types_test.go',
    config: {
      overrides,
      availableFeatures: [IMG, PULL, CTB],
      clusterTrustBundle: ctbMapping,
      imagePullSecret: { name: testPullSecret },
    },
    pod: getTestPod({ [ALL]: 'true', [CTB]: 'restart-on-change' }),
    expect: (pod) => {
      assert.deepEqual(images(pod), alteredImages);
      assert.ok(hasPullSecret(pod));
      assert.equal(pod.spec?.volumes, undefined, 'the trust bundle is not "true" at the Pod level');
    },
  },
  {
    name: 'TestConfig_ExpandAnnotationAll_PreservesCTBValues: false preserved over all expansion',
    source: 'types_test.go',
    config: { overrides, availableFeatures: [IMG, PULL, CTB], clusterTrustBundle: ctbMapping },
    pod: getTestPod({ [ALL]: 'true', [CTB]: 'false' }),
    expect: (pod) => {
      assert.deepEqual(images(pod), alteredImages);
      assert.equal(pod.spec?.volumes, undefined);
    },
  },
];

function mutate(c: Pick<Case, 'config' | 'pod' | 'namespaceAnnotations' | 'landscape'>): Pod {
  const namespaceText =
    c.namespaceAnnotations === undefined
      ? undefined
      : JSON.stringify({
          kind: 'Namespace',
          metadata: { name: c.pod.metadata?.namespace ?? 'default', annotations: c.namespaceAnnotations },
        });
  const out = previewMutation({
    podText: JSON.stringify(c.pod),
    configText: JSON.stringify(c.config),
    ...(namespaceText === undefined ? {} : { namespaceText }),
    landscape: c.landscape,
    output: 'json',
  });
  return JSON.parse(out) as Pod;
}

describe("rtb mutate gives upstream's results for upstream's own cases", () => {
  for (const c of cases) {
    test(`${c.source}: ${c.name}${c.difference ? ` (deliberate difference: ${c.difference})` : ''}`, () => {
      const mutated = mutate(c);
      c.expect(mutated, c.pod);
      // Upstream marks a changed Pod "modified"; we also keep the seed's "defaulted".
      const changed = JSON.stringify(mutated) !== JSON.stringify(c.pod);
      assert.equal(mutated.metadata?.annotations?.[MODIFIED], changed ? 'true' : undefined);
    });
  }
});

describe('deliberate differences, asserted', () => {
  test('4: upstream\'s literal fixture target "test-registry" is never used (warned), images stay', () => {
    const warnings: string[] = [];
    const config = {
      ...webhookConfig,
      overrides: { 'test.com': 'test-registry', 'test.com:2000': 'test-registry' },
    };
    const pod = getTestPod({ [IMG]: 'true', [PULL]: 'true' });
    const out = JSON.parse(
      previewMutation({
        podText: JSON.stringify(pod),
        configText: JSON.stringify(config),
        output: 'json',
        onWarning: (w) => warnings.push(w),
      }),
    ) as Pod;
    assert.deepEqual(images(out), ['test.com/me/plz:now', 'test.com:2000/this/too:plz']);
    assert.ok(hasPullSecret(out), 'the other feature still applies');
    const never = warnings.filter((w) => w.endsWith('this override is never used'));
    assert.equal(never.length, 2, JSON.stringify(warnings));
    assert.ok(never[0]?.startsWith('config overrides["test.com"]: target host "test-registry"'));
    assert.ok(never[1]?.startsWith('config overrides["test.com:2000"]: target host "test-registry"'));
  });

  test('1: an image without a registry is rewritten by a docker.io override (upstream leaves it)', () => {
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { annotations: { [IMG]: 'true' } },
      spec: { containers: [{ name: 'a', image: 'nginx:1' }] },
    };
    const config = { overrides: { 'docker.io': 'mirror.example.com/hub' }, availableFeatures: [IMG] };
    assert.deepEqual(images(mutate({ pod, config })), ['mirror.example.com/hub/library/nginx:1']);
  });

  test('2: the trust bundle is mounted in init containers too (upstream: containers only)', () => {
    const pod: Pod = { ...makeLandscapePod({ [CTB]: 'true' }) };
    const out = mutate({ pod, config: ctbConfig });
    for (const c of allContainers(out))
      assert.deepEqual(
        c.volumeMounts,
        [{ mountPath: '/etc/ssl/certs', name: 'rt-bootstrapper-certs', readOnly: true }],
        c.name,
      );
  });

  test('5: a Pod "false" opts out of a feature its namespace opts into (upstream: only the trust bundle)', () => {
    const config = { ...webhookConfig, namespaceFeatures: { 'kyma-system': [IMG] } };
    const out = mutate({ pod: getTestPod({ [IMG]: 'false' }, 'kyma-system'), config });
    assert.deepEqual(images(out), ['test.com/me/plz:now', 'test.com:2000/this/too:plz']);
  });

  test('a config upstream refuses to start with is refused by rtb mutate too: set-landscape without --landscape', () => {
    assert.throws(
      () =>
        mutate({
          pod: makeLandscapePod({ [LAND]: 'true' }),
          config: { overrides: {}, availableFeatures: [LAND] },
        }),
      /invalid config: availableFeatures\[0\]: "rt-cfg.kyma-project.io\/set-landscape" is available but no landscape is known/,
    );
  });
});
