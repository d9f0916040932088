import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { WebhookConfigInput } from '../../../src/api/webhook-config.js';
import {
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURES,
} from '../../../src/api/webhook-features.js';
import { normalizeMountPath } from '../../../src/mutation/add-cluster-trust-bundle.js';
import {
  celString,
  POLICY_MAX_CONTAINERS,
  POLICY_MAX_LIST,
} from '../../../src/render/admission-policy-cel.js';
import {
  AdmissionPolicyConfigError,
  MAX_POLICY_OVERRIDES,
  MAX_POLICY_VALUE_CHARS,
  mountPathPattern,
} from '../../../src/render/admission-policy-params.js';
import {
  ADMISSION_POLICY_NAME,
  admissionPolicyManifestList,
  renderAdmissionPolicy,
  type AdmissionPolicyOptions,
} from '../../../src/render/admission-policy.js';
import {
  AdmissionNamespaceError,
  NOT_OWN_PODS_CONDITION,
  renderMutatingWebhookConfiguration,
} from '../../../src/render/webhook-registration.js';
import { makeConfig, seedTrustBundle } from '../mutation/support.js';

// The rendered objects are plain JSON; read them as such.
type Json = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: Record<string, unknown> & {
    matchConstraints: Record<string, unknown>;
    matchConditions: { name: string; expression: string }[];
    variables: { name: string; expression: string }[];
    mutations: { patchType: string; jsonPatch: { expression: string } }[];
    paramRef: Record<string, unknown>;
  };
  data: Record<string, string>;
};
const render = (patch: Partial<WebhookConfigInput> = {}, options: AdmissionPolicyOptions = {}) => {
  const m = renderAdmissionPolicy(makeConfig(patch), options);
  return { params: m.params as Json, policy: m.policy as Json, binding: m.binding as Json };
};
const dataOf = (patch: Partial<WebhookConfigInput> = {}, options: AdmissionPolicyOptions = {}) =>
  render(patch, options).params.data;

describe('renderAdmissionPolicy: the objects', () => {
  test('parameters, policy and binding, in the order they are applied, all of one name', () => {
    const m = renderAdmissionPolicy(makeConfig());
    assert.deepEqual(
      admissionPolicyManifestList(m).map((o) => [o.kind, o.apiVersion]),
      [
        ['ConfigMap', 'v1'],
        ['MutatingAdmissionPolicy', 'admissionregistration.k8s.io/v1'],
        ['MutatingAdmissionPolicyBinding', 'admissionregistration.k8s.io/v1'],
      ],
    );
    for (const o of admissionPolicyManifestList(m))
      assert.equal((o as Json).metadata.name, ADMISSION_POLICY_NAME);
    assert.equal(render().params.metadata.namespace, 'kyma-system');
  });

  test('--api-version v1beta1 for 1.34-1.35; the parameters stay a v1 ConfigMap', () => {
    const { params, policy, binding } = render({}, { apiVersion: 'v1beta1' });
    assert.equal(policy.apiVersion, 'admissionregistration.k8s.io/v1beta1');
    assert.equal(binding.apiVersion, 'admissionregistration.k8s.io/v1beta1');
    assert.equal(params.apiVersion, 'v1');
  });

  test('the policy: Pods on CREATE only, where the webhook registration matches, failing open, called again', () => {
    const { spec } = render().policy;
    const webhook = renderMutatingWebhookConfiguration({ image: 'x' }, 'kyma-system').webhooks?.[0];
    assert.deepEqual(spec.matchConstraints.resourceRules, [
      { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
    ]);
    assert.deepEqual(spec.matchConstraints.namespaceSelector, webhook?.namespaceSelector);
    assert.deepEqual(spec.matchConstraints.objectSelector, webhook?.objectSelector);
    assert.deepEqual(spec.matchConditions[0], webhook?.matchConditions?.[0]);
    assert.equal(spec.failurePolicy, 'Ignore');
    assert.equal(spec.reinvocationPolicy, 'IfNeeded');
    assert.deepEqual(spec.paramKind, { apiVersion: 'v1', kind: 'ConfigMap' });
    assert.equal(spec.mutations.length, 1);
    const [mutation] = spec.mutations;
    assert.ok(mutation);
    assert.equal(mutation.patchType, 'JSONPatch');
    assert.match(mutation.jsonPatch.expression, /^variables\.deferred \? \[\] : /);
  });

  test("a tenant's Pod labelled as ours is mutated: only the webhook's own Pods in its namespace are left out", () => {
    const { spec } = render().policy;
    // Upstream's objectSelector on the label alone let any namespace user's Pod escape the policy.
    assert.deepEqual(spec.matchConstraints.objectSelector, {});
    assert.deepEqual(spec.matchConditions[0], {
      name: NOT_OWN_PODS_CONDITION,
      expression:
        '!(request.namespace == "kyma-system" && has(object.metadata.labels) && ' +
        '"app.kubernetes.io/name" in object.metadata.labels && ' +
        'object.metadata.labels["app.kubernetes.io/name"] == "rt-bootstrapper")',
    });
    // The namespace is the parameters', the webhook's: the same as the registration's.
    const elsewhere = render({}, { namespace: 'rtb-ns' }).policy.spec;
    const registration = renderMutatingWebhookConfiguration({ image: 'x' }, 'rtb-ns').webhooks?.[0];
    assert.deepEqual(elsewhere.matchConditions[0], registration?.matchConditions?.[0]);
    assert.match(elsewhere.matchConditions[0]?.expression ?? '', /request\.namespace == "rtb-ns"/);
    assert.throws(() => render({}, { namespace: 'Not A Namespace' }), AdmissionNamespaceError);
  });

  test('the matchConditions bound what CEL scans: containers, env, mounts, volumes, pull Secrets', () => {
    const conditions = render().policy.spec.matchConditions.slice(1);
    assert.deepEqual(
      conditions.map((c) => c.name),
      ['at-most-so-many-containers', 'bounded-lists'],
    );
    assert.match(conditions[0]?.expression ?? '', new RegExp(`<= ${POLICY_MAX_CONTAINERS}$`));
    for (const list of ['object.spec.volumes', 'object.spec.imagePullSecrets', 'c.env', 'c.volumeMounts'])
      assert.ok(conditions[1]?.expression.includes(`size(${list}) <= ${POLICY_MAX_LIST}`), list);
  });

  test('the binding: its parameters by name and namespace; without them the policy does nothing', () => {
    const { binding } = render({}, { namespace: 'rtb' });
    assert.deepEqual(binding.spec, {
      policyName: ADMISSION_POLICY_NAME,
      paramRef: { name: ADMISSION_POLICY_NAME, namespace: 'rtb', parameterNotFoundAction: 'Allow' },
    });
    assert.equal(render({}, { namespace: 'rtb' }).params.metadata.namespace, 'rtb');
  });

  test('the policy text is one for every config and option: a set changes only the parameters', () => {
    const a = render();
    const b = render(
      {
        overrides: { 'docker.io': 'mirror.io/hub' },
        availableFeatures: [FEATURE_SET_FIPS_MODE],
        namespaceFeatures: { team: [FEATURE_ALL] },
        landscape: 'eu10',
        overrideExclusions: ['nginx', 'mirror.io/hub/x:1'],
      },
      { revision: 'set-2', trustBundleHash: 'b'.repeat(64), trustBundleMount: false },
    );
    assert.deepEqual(a.policy, b.policy);
    assert.notDeepEqual(a.params.data, b.params.data);
  });

  test('the same input renders the same objects', () => {
    assert.deepEqual(render({}, { revision: 'r' }), render({}, { revision: 'r' }));
  });
});

describe('renderAdmissionPolicy: the parameters', () => {
  test('available features expanded, in FEATURES order; the pull Secret by name', () => {
    assert.equal(dataOf().available, FEATURES.join(' '));
    assert.equal(
      dataOf({ availableFeatures: [FEATURE_SET_FIPS_MODE, FEATURE_ALTER_IMG_REGISTRY] }).available,
      `${FEATURE_ALTER_IMG_REGISTRY} ${FEATURE_SET_FIPS_MODE}`,
    );
    assert.equal(dataOf({ availableFeatures: [] }).available, '');
    assert.equal(dataOf({ imagePullSecret: { name: 'creds' } }).pullSecret, 'creds');
  });

  test("the config's namespace list: per namespace, what is available of it; keys no namespace has are left out", () => {
    const data = dataOf({
      availableFeatures: [FEATURE_ALTER_IMG_REGISTRY, FEATURE_ADD_CLUSTER_TRUST_BUNDLE],
      namespaceFeatures: {
        team: [FEATURE_ALL],
        'Not-A-Namespace': [FEATURE_ALL],
        default: [FEATURE_ADD_CLUSTER_TRUST_BUNDLE],
      },
    });
    assert.equal(data['namespace.team'], `${FEATURE_ALTER_IMG_REGISTRY} ${FEATURE_ADD_CLUSTER_TRUST_BUNDLE}`);
    assert.equal(data['namespace.default'], FEATURE_ADD_CLUSTER_TRUST_BUNDLE);
    assert.deepEqual(
      Object.keys(data).filter((k) => k.startsWith('namespace.')),
      ['namespace.team', 'namespace.default'],
    );
  });

  test('overrides: the usable ones, one a line (source, host, host as a registry, path prefix)', () => {
    const data = dataOf({
      overrides: {
        'replace.me': 'ghcr.io',
        'localhost:5000': 'mirror.io:443/a/b',
        'index.docker.io': 'legacy.io',
        'docker.io': 'hub.io',
        nodot: 'ghcr.io',
        'quay.io': 'index.docker.io/mirror',
      },
    });
    assert.deepEqual(data.overrides?.split('\n'), [
      'replace.me ghcr.io ghcr.io ',
      'localhost:5000 mirror.io:443 mirror.io:443 a/b',
      'docker.io hub.io hub.io ',
      'quay.io index.docker.io docker.io mirror',
    ]);
    assert.equal(dataOf({ overrides: {} }).overrides, '');
  });

  test('overrideExclusions: one a line as runtimes read it (registry, repository or path, kind, tag, digest); absent without', () => {
    const digest = `sha256:${'d'.repeat(64)}`;
    const data = dataOf({
      overrideExclusions: [
        'nginx',
        'index.docker.io/bitnami/redis:7',
        `localhost:5000/a/b@${digest}`,
        'ghcr.io/x:1',
        'index.docker.io/bitnami/*',
      ],
    });
    assert.deepEqual(data.overrideExclusions?.split('\n'), [
      'docker.io library/nginx repository',
      'docker.io bitnami/redis image 7 ',
      `localhost:5000 a/b image  ${digest}`,
      'ghcr.io x image 1 ',
      'docker.io bitnami below',
    ]);
    assert.equal('overrideExclusions' in dataOf(), false);
    assert.equal('overrideExclusions' in dataOf({ overrideExclusions: [] }), false);
  });

  test("landscape: the config's, or none", () => {
    assert.equal(dataOf({ landscape: 'eu10' }).landscape, 'eu10');
    assert.equal(dataOf().landscape, undefined);
  });

  test('revision: annotation always, label only where it can be a label value', () => {
    assert.deepEqual(
      [dataOf({}, { revision: 'set-1' }).revision, dataOf({}, { revision: 'set-1' }).revisionLabel],
      ['set-1', 'set-1'],
    );
    const odd = dataOf({}, { revision: 'set:1/x' });
    assert.equal(odd.revision, 'set:1/x');
    assert.equal(odd.revisionLabel, undefined);
    assert.equal(dataOf().revision, undefined);
  });

  test('trust bundle: the config block, the name option winning, the hash when known, nothing where the runtime cannot mount', () => {
    const data = dataOf({}, { trustBundleHash: 'c'.repeat(64) });
    assert.equal(data.trustBundleName, seedTrustBundle.name);
    assert.equal(data.trustBundlePath, seedTrustBundle.certWritePath);
    assert.equal(data.trustBundleVolume, seedTrustBundle.volumeName);
    assert.equal(data.trustBundleMountPath, seedTrustBundle.volumeMountPath);
    assert.equal(data.trustBundleMountPattern, '^/+etc/+ssl/+certs/*$');
    assert.equal(data.trustBundleHash, 'c'.repeat(64));
    assert.equal(dataOf({}, { trustBundleName: 'ctb:2' }).trustBundleName, 'ctb:2');
    assert.equal(dataOf().trustBundleHash, undefined);
    const off = dataOf({}, { trustBundleMount: false, trustBundleHash: 'c'.repeat(64) });
    assert.deepEqual(
      Object.keys(off).filter((k) => k.startsWith('trustBundle')),
      [],
    );
    const { clusterTrustBundle: _none, ...rest } = makeConfig();
    assert.deepEqual(
      Object.keys((renderAdmissionPolicy(rest).params as Json).data).filter((k) =>
        k.startsWith('trustBundle'),
      ),
      [],
    );
  });
});

describe('renderAdmissionPolicy: what a policy cannot carry is refused, naming the field', () => {
  const refused = (field: string, run: () => unknown): void => {
    assert.throws(run, (error: unknown) => {
      assert.ok(error instanceof AdmissionPolicyConfigError);
      assert.equal(error.field, field);
      assert.ok(error.message.startsWith(`${field}: `), error.message);
      return true;
    });
  };

  test('more overrides than a policy carries', () => {
    const many = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`r${i}.io`, 'ghcr.io']));
    assert.doesNotThrow(() => render({ overrides: many(MAX_POLICY_OVERRIDES) }));
    refused('overrides', () => render({ overrides: many(MAX_POLICY_OVERRIDES + 1) }));
    // Unusable ones do not count: they are never scanned.
    assert.doesNotThrow(() => render({ overrides: { ...many(MAX_POLICY_OVERRIDES), nodot: 'x.io' } }));
  });

  test('a trust-bundle name without a trust bundle', () => {
    const { clusterTrustBundle: _none, ...rest } = makeConfig();
    refused('clusterTrustBundle', () => renderAdmissionPolicy(rest, { trustBundleName: 'x' }));
  });

  test('a hash that is no SHA-256', () => {
    refused('trustBundleHash', () => render({}, { trustBundleHash: 'abc' }));
  });

  test('an empty, multi-line or overlong revision or landscape', () => {
    for (const bad of ['', 'a\nb', 'x'.repeat(MAX_POLICY_VALUE_CHARS + 1)])
      refused('revision', () => render({}, { revision: bad }));
    // The config reads an empty landscape as none.
    for (const bad of ['a\nb', 'x'.repeat(MAX_POLICY_VALUE_CHARS + 1)])
      refused('landscape', () => render({ landscape: bad }));
    refused('clusterTrustBundle.name', () => render({}, { trustBundleName: 'a\nb' }));
  });
});

describe('mountPathPattern', () => {
  test('matches exactly the spellings the webhook reads as the path', () => {
    const spellings = [
      '/etc/ssl/certs',
      '/etc/ssl/certs/',
      '//etc//ssl///certs//',
      '/etc/ssl',
      '/etc/ssl/certsx',
      '/etc/ssl/certs/x',
      'etc/ssl/certs',
      '/',
      '//',
      '/a.b',
      '/aXb',
      '/a+b/(c)',
      '/a+b/(c)/',
      '/aab/(c)',
    ];
    for (const wanted of ['/etc/ssl/certs', '/etc/ssl/certs/', '/', 'etc/ssl/certs', '/a.b', '/a+b/(c)']) {
      const re = new RegExp(mountPathPattern(wanted));
      for (const path of spellings)
        assert.equal(
          re.test(path),
          normalizeMountPath(path) === normalizeMountPath(wanted),
          `${wanted} vs ${path}`,
        );
    }
  });
});

test('celString quotes backslashes and quotes', () => {
  assert.equal(celString("a'b\\c"), "'a\\'b\\\\c'");
});
