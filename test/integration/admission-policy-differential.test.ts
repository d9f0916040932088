// test-matrix: kubernetes
/**
 * The admission policy against the webhook's pure core, on a real API server: every case of the
 * mutation and image-reference tables (test/support/mutation-cases.ts) and the pipeline's own
 * cases below is created (dry run) through the policy, and the stored Pod must be what mutatePod
 * makes of the Pod the API server hands to admission, or that Pod unchanged exactly where
 * docs/admission-policy.md says the policy leaves it to the webhook. 1.37 serves the policy as
 * v1; 1.34 as v1beta1 behind its gate (RTB_TEST_KUBERNETES picks the minor).
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { parseWebhookConfig, type WebhookConfigInput } from '../../src/api/webhook-config.js';
import {
  ANNOTATION_DEFAULTED,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURE_SET_LANDSCAPE,
} from '../../src/api/webhook-features.js';
import { CTB_HASH_ANNOTATION } from '../../src/api/trust-stamp.js';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
} from '../../src/api/workload-health.js';
import { defaultKubernetesVersion, KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import { eventually } from '../../src/envtest/eventually.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { mutatePod } from '../../src/mutation/pipeline.js';
import type { Container, EnvVar, Pod } from '../../src/mutation/pod.js';
import { rewrittenImages } from '../../src/mutation/stamp-revision.js';
import { POLICY_MAX_CONTAINERS, POLICY_MAX_LIST } from '../../src/render/admission-policy-cel.js';
import type { TrustBundleMount } from '../../src/api/trust-bundle-capability.js';
import fc from 'fast-check';
import { mutationRequest } from '../support/mutation-arbitraries.js';
import { renderAdmissionPolicy } from '../../src/render/admission-policy.js';
import { MAX_POLICY_OVERRIDES } from '../../src/render/admission-policy-params.js';
import { MAX_OVERRIDE_EXCLUSIONS } from '../../src/image/override-exclusions.js';
import { useControlPlane } from '../support/control-plane.js';
import { seedConfigText, seedPodBefore } from '../support/fixtures.js';
import { httpsCall } from '../support/https-call.js';
import {
  exclusionCases,
  featureRows,
  invalidReferences,
  rewriteCases,
  rewriteExclusions,
  rewriteOverrides,
  validReferences,
} from '../support/mutation-cases.js';

const version = defaultKubernetesVersion();
const { api, apiserverArgs } = KUBERNETES_VERSIONS[version].admissionPolicy;
const plane = useControlPlane({ clusters: ['runtime'], apiserverArgs });

/** One case: a config, the Pod's namespace and the Pod, and what a set adds. */
interface DiffCase {
  readonly name: string;
  readonly config: WebhookConfigInput;
  readonly namespace: string;
  readonly namespaceAnnotations?: Readonly<Record<string, string>> | undefined;
  readonly pod: Pod;
  readonly revision?: string | undefined;
  readonly trustBundleHash?: string | undefined;
  /** Where the runtime cannot take the trust-bundle mount; default it can. */
  readonly trustBundleMount?: TrustBundleMount | undefined;
}

const TRUST_BUNDLE = {
  name: 'rt-bootstrapper-k3d.test:ctb:1',
  certWritePath: 'kube-apiserver-serving.pem',
  volumeName: 'rt-bootstrapper-certs',
  volumeMountPath: '/etc/ssl/certs',
};
const BASE_CONFIG: WebhookConfigInput = {
  overrides: { 'replace.me': 'ghcr.io' },
  clusterTrustBundle: TRUST_BUNDLE,
  availableFeatures: [FEATURE_ALL],
  landscape: 'NS2',
};
const HASH = 'a'.repeat(64);
// Most cases: the base config, a namespace the config says nothing of.
const TEAM = { config: BASE_CONFIG, namespace: 'team' } as const;
/** The trust-bundle volume as the webhook adds it, but for the file's path. */
const trustBundleVolume = (path: string) => ({
  name: TRUST_BUNDLE.volumeName,
  projected: { sources: [{ clusterTrustBundle: { name: TRUST_BUNDLE.name, path } }] },
});

const pod = (
  spec: Pod['spec'],
  annotations?: Record<string, string>,
  labels?: Record<string, string>,
): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', annotations, labels },
  spec,
});
const app = (image = 'replace.me/app:1'): NonNullable<Pod['spec']> => ({
  containers: [{ name: 'app', image }],
  initContainers: [{ name: 'init', image: 'busybox' }],
});

/** A Pod whose container `app` (nginx) has `env`, beside `others`, annotated `annotations`. */
const envPod = (env: EnvVar[], annotations: Record<string, string>, others: Container[] = []): Pod =>
  pod({ containers: [{ name: 'app', image: 'nginx', env }, ...others] }, annotations);

const featureCases: DiffCase[] = featureRows.map((row) => ({
  name: `features: ${row.name}`,
  config: {
    ...BASE_CONFIG,
    availableFeatures: [...row.available],
    namespaceFeatures: copy(row.namespaceFeatures),
  },
  namespace:
    row.namespaceName === undefined ? 'team' : row.namespaceName === '' ? 'default' : row.namespaceName,
  namespaceAnnotations: row.ns,
  pod: pod(app(), row.pod === undefined ? undefined : { ...row.pod }),
}));

const imageConfig: WebhookConfigInput = { ...BASE_CONFIG, overrides: { ...rewriteOverrides } };
const excludingConfig: WebhookConfigInput = { ...imageConfig, overrideExclusions: [...rewriteExclusions] };
const imageCase = (name: string, image: string, revision?: string, config = imageConfig): DiffCase => ({
  name,
  config,
  namespace: 'team',
  pod: pod(app(image), { [FEATURE_ALTER_IMG_REGISTRY]: 'true' }),
  revision,
});
const imageCases: DiffCase[] = [
  ...validReferences.map(([input]) => imageCase(`valid reference ${input}`, input)),
  ...invalidReferences.map(([input]) => imageCase(`invalid reference ${JSON.stringify(input)}`, input)),
  ...rewriteCases.map(([name, image]) => imageCase(`rewrite: ${name}`, image, 'set-3')),
  ...exclusionCases.map(([name, image]) => imageCase(`exclusion: ${name}`, image, 'set-3', excludingConfig)),
  {
    name: 'exclusion: excluded and rewritten images side by side, under a set',
    config: excludingConfig,
    namespace: 'team',
    pod: pod(
      {
        containers: exclusionCases.slice(0, 12).map(([, image], i) => ({ name: `c${i}`, image })),
        initContainers: [{ name: 'init', image: 'busybox:1.36' }],
      },
      { [FEATURE_ALL]: 'true' },
    ),
    revision: 'set-3',
  },
];

const ALL_ON = { [FEATURE_ALL]: 'true' };
const pipelineCases: DiffCase[] = [
  {
    name: 'the seed',
    config: JSON.parse(seedConfigText()) as WebhookConfigInput,
    namespace: 'default',
    pod: seedPodBefore(),
  },
  {
    name: 'the seed under a set, with the bundle hash known',
    config: JSON.parse(seedConfigText()) as WebhookConfigInput,
    namespace: 'default',
    pod: seedPodBefore(),
    revision: 'set-1',
    trustBundleHash: HASH,
  },
  {
    name: 'a revision that is no label value: annotation only',
    ...TEAM,
    pod: pod(app(), ALL_ON),
    revision: 'set:1/with a space',
  },
  {
    name: 'env: valueFrom, other values and duplicates of ours are replaced; the rest kept',
    ...TEAM,
    pod: envPod(
      [
        { name: 'A', value: '1' },
        { name: 'FIPS_MODE_ENABLED', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'KYMA_FIPS_MODE_ENABLED', value: 'false' },
        { name: 'KYMA_LANDSCAPE', value: 'other' },
        { name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' },
        { name: 'B', value: '2' },
      ],
      { [FEATURE_SET_FIPS_MODE]: 'true', [FEATURE_SET_LANDSCAPE]: 'true' },
      [{ name: 'ok', image: 'nginx', env: [{ name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' }] }],
    ),
  },
  {
    name: 'env already as wanted: nothing changes, no marks',
    ...TEAM,
    pod: envPod(
      [
        { name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' },
        { name: 'FIPS_MODE_ENABLED', value: 'true' },
      ],
      { [FEATURE_SET_FIPS_MODE]: 'true' },
    ),
  },
  {
    name: 'trust bundle: another volume of our name blocks the mount',
    ...TEAM,
    pod: pod(
      {
        volumes: [{ name: 'rt-bootstrapper-certs', emptyDir: {} }],
        containers: [{ name: 'app', image: 'nginx' }],
      },
      { [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]: 'true' },
    ),
  },
  {
    name: 'trust bundle: our volume reused; a container with something else at the path is skipped; //-spelled path counts',
    ...TEAM,
    pod: pod(
      {
        volumes: [trustBundleVolume(TRUST_BUNDLE.certWritePath), { name: 'other', emptyDir: {} }],
        containers: [
          { name: 'a', image: 'nginx' },
          { name: 'b', image: 'nginx', volumeMounts: [{ name: 'other', mountPath: '/etc//ssl/certs/' }] },
          { name: 'c', image: 'nginx', volumeMounts: [{ name: 'other', mountPath: '/data' }] },
        ],
        initContainers: [{ name: 'i', image: 'nginx' }],
      },
      { [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]: 'true' },
    ),
  },
  {
    name: 'trust bundle: a different path of our volume is not ours; the stamp still follows the mount',
    ...TEAM,
    pod: pod(
      {
        volumes: [trustBundleVolume('other.pem')],
        containers: [
          { name: 'a', image: 'nginx', volumeMounts: [{ name: 'rt-bootstrapper-certs', mountPath: '/x' }] },
        ],
      },
      { [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]: 'true', [CTB_HASH_ANNOTATION]: 'stale' },
    ),
  },
  {
    name: 'trust bundle: a stale hash is removed where none is known',
    ...TEAM,
    pod: pod(app(), { [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]: 'true', [CTB_HASH_ANNOTATION]: 'stale' }),
  },
  {
    name: 'pull Secret: appended after others, not doubled',
    ...TEAM,
    pod: pod({ ...app(), imagePullSecrets: [{ name: 'other' }] }, { [FEATURE_ADD_IMG_PULL_SECRET]: 'true' }),
  },
  {
    name: 'pull Secret: already referenced',
    ...TEAM,
    pod: pod(
      { ...app(), imagePullSecrets: [{ name: 'registry-credentials' }] },
      { [FEATURE_ADD_IMG_PULL_SECRET]: 'true' },
    ),
  },
  {
    name: 'marks: a wrong value is replaced',
    ...TEAM,
    pod: pod(app(), { [FEATURE_SET_FIPS_MODE]: 'true', [ANNOTATION_DEFAULTED]: 'false' }),
  },
  {
    name: 'a forged revision on a Pod no feature applies to is removed',
    ...TEAM,
    pod: pod(app(), { [REVISION_ANNOTATION]: 'set-9' }, { [REVISION_LABEL]: 'set-9' }),
    revision: 'set-1',
  },
  {
    name: 'a forged revision on a Pod changed under no set is removed',
    ...TEAM,
    pod: pod(app(), { ...ALL_ON, [REVISION_ANNOTATION]: 'set-9' }, { [REVISION_LABEL]: 'set-9' }),
  },
  {
    name: 'our own stamp on an unchanged Pod stays (re-invocation)',
    ...TEAM,
    pod: pod(
      { containers: [{ name: 'app', image: 'ghcr.io/app:1' }] },
      { [FEATURE_ALTER_IMG_REGISTRY]: 'true', [REVISION_ANNOTATION]: 'set-1' },
      { [REVISION_LABEL]: 'set-1' },
    ),
    revision: 'set-1',
  },
  {
    name: 'several images rewritten under a set: the originals in container order',
    ...TEAM,
    pod: pod(
      {
        containers: [
          { name: 'b', image: 'replace.me/b:1' },
          { name: 'a', image: 'replace.me/a:1' },
        ],
        initContainers: [{ name: 'i', image: 'replace.me/i@sha256:' + 'c'.repeat(64) }],
      },
      { [FEATURE_ALTER_IMG_REGISTRY]: 'true' },
    ),
    revision: 'set-2',
  },
  // Left to the webhook (docs/admission-policy.md).
  {
    name: 'deferred: a Pod that brings original images along, under a set',
    ...TEAM,
    pod: pod(app(), { ...ALL_ON, [ORIGINAL_IMAGES_ANNOTATION]: '{"app":"replace.me/app:1"}' }),
    revision: 'set-1',
  },
  {
    name: 'deferred: numbered containers whose images are rewritten under a set',
    ...TEAM,
    pod: pod(
      {
        containers: [
          { name: 'x', image: 'replace.me/x:1' },
          { name: '1', image: 'replace.me/y:1' },
        ],
      },
      { [FEATURE_ALTER_IMG_REGISTRY]: 'true' },
    ),
    revision: 'set-1',
  },
  {
    name: 'deferred: more containers than the policy mutates',
    ...TEAM,
    pod: pod(
      {
        containers: Array.from({ length: POLICY_MAX_CONTAINERS + 1 }, (_, i) => ({
          name: `c${i}`,
          image: 'replace.me/a:1',
        })),
      },
      ALL_ON,
    ),
  },
];

// The costliest Pod the policy takes: every list at its bound, every env entry one of ours,
// long images matched against the most overrides a policy carries (Docker Hub's scanned last).
const VOLUMES = 100;
const OURS = ['KYMA_FIPS_MODE_ENABLED', 'FIPS_MODE_ENABLED', 'KYMA_LANDSCAPE'];
const largest: DiffCase = {
  name: 'the costliest Pod the policy mutates, within the API server cost limits',
  config: {
    ...BASE_CONFIG,
    overrides: {
      ...Object.fromEntries(
        Array.from({ length: MAX_POLICY_OVERRIDES - 1 }, (_, i) => [
          `r${i}.example.com`,
          `m${i}.example.com/p`,
        ]),
      ),
      'docker.io': 'mirror.example.com/hub',
    },
  },
  namespace: 'team',
  revision: 'set-1',
  trustBundleHash: HASH,
  pod: pod(
    {
      volumes: Array.from({ length: VOLUMES }, (_, v) => ({ name: `v${v}`, emptyDir: {} })),
      containers: Array.from({ length: POLICY_MAX_CONTAINERS }, (_, i) => ({
        name: `c${i}`,
        image: `${'r'.repeat(240)}/x${i}:${'t'.repeat(128)}@sha512:${'0123456789abcdef'.repeat(8)}`,
        env: Array.from({ length: POLICY_MAX_LIST }, (_, j) => ({ name: OURS[j % 3]!, value: String(j) })),
        volumeMounts: Array.from({ length: VOLUMES }, (_, v) => ({ name: `v${v}`, mountPath: `/m/${v}` })),
      })),
    },
    ALL_ON,
  ),
};

// The same with the most exclusions a config lists, each compared at length against every image
// (the last names one container's image exactly).
const LONG_REPO = 'r'.repeat(240);
const largestExcluding: DiffCase = {
  ...largest,
  name: 'the costliest Pod with the most overrideExclusions, within the API server cost limits',
  config: {
    ...largest.config,
    overrideExclusions: [
      ...Array.from({ length: MAX_OVERRIDE_EXCLUSIONS - 1 }, (_, i) => `${LONG_REPO}/y${i}`),
      `${LONG_REPO}/x1:${'t'.repeat(128)}@sha512:${'0123456789abcdef'.repeat(8)}`,
    ],
  },
};

// A fixed sample of the property tests' requests: CREATEs of every shape, half under a set.
const sampled: DiffCase[] = fc.sample(mutationRequest, { seed: 47, numRuns: 120 }).map((r, i) => ({
  name: `sample ${i}`,
  config: JSON.parse(JSON.stringify(r.config)) as WebhookConfigInput,
  namespace: r.namespace.name === '' ? 'default' : r.namespace.name,
  namespaceAnnotations: r.namespace.annotations,
  pod: JSON.parse(JSON.stringify(r.pod)) as Pod,
  revision: i % 2 === 0 ? 'set-5' : undefined,
  trustBundleMount: r.mount,
}));

const cases: readonly DiffCase[] = [
  ...pipelineCases,
  largest,
  largestExcluding,
  ...featureCases,
  ...imageCases,
  ...sampled,
];

function copy<V>(m: Readonly<Record<string, readonly V[]>> | undefined): Record<string, V[]> | undefined {
  return m === undefined ? undefined : Object.fromEntries(Object.entries(m).map(([k, v]) => [k, [...v]]));
}

/** The case's config with its namespace renamed to the one the case runs in (each its own). */
function configIn(c: DiffCase, namespace: string): WebhookConfigInput {
  const renamed = Object.entries(c.config.namespaceFeatures ?? {}).map(([ns, keys]) => [
    ns === c.namespace ? namespace : ns,
    keys,
  ]);
  return {
    ...c.config,
    namespaceFeatures: Object.fromEntries(renamed) as WebhookConfigInput['namespaceFeatures'],
  };
}

/** Whether the policy leaves `input` to the webhook (each case of docs/admission-policy.md). */
function policyDefers(input: Pod, result: ReturnType<typeof mutatePod>, c: DiffCase): boolean {
  const spec = input.spec;
  const count = (spec?.containers.length ?? 0) + (spec?.initContainers?.length ?? 0);
  if (count > POLICY_MAX_CONTAINERS) return true;
  if (c.revision === undefined || result.selected.length === 0) return false;
  if (input.metadata?.annotations?.[ORIGINAL_IMAGES_ANNOTATION] !== undefined) return true;
  const rewritten = rewrittenImages(input, result.pod);
  return (
    result.applied.length > 0 &&
    rewritten.size > 1 &&
    [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])].some((x) =>
      /^(?:0|[1-9][0-9]*)$/.test(x.name),
    )
  );
}

/**
 * What the API server adds to every stored Pod anew (identity, time, field owners), and the empty
 * maps it stores as absent (the webhook's core may leave `labels: {}` after removing a key).
 */
function comparable(p: Pod): Pod {
  const {
    uid: _uid,
    creationTimestamp: _ts,
    managedFields: _mf,
    labels,
    annotations,
    ...metadata
  } = p.metadata ?? {};
  const some = (m: Record<string, string> | undefined): Record<string, string> | undefined =>
    m === undefined || Object.keys(m).length === 0 ? undefined : m;
  return {
    ...p,
    metadata: JSON.parse(
      JSON.stringify({ ...metadata, labels: some(labels), annotations: some(annotations) }),
    ) as Pod['metadata'],
  };
}

interface Call {
  readonly status: number;
  readonly json: Record<string, unknown>;
}

function caller(cluster: LocalCluster): (method: string, path: string, body?: unknown) => Promise<Call> {
  const user = cluster.kubeConfig().getCurrentUser();
  const client = {
    certPem: Buffer.from(user?.certData ?? '', 'base64').toString(),
    keyPem: Buffer.from(user?.keyData ?? '', 'base64').toString(),
  };
  return async (method, path, body) => {
    const reply = await httpsCall({
      port: cluster.port,
      caPem: cluster.caPem,
      client,
      path,
      method,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: reply.status, json: JSON.parse(reply.body) as Record<string, unknown> };
  };
}

describe(`the admission policy (${api}) stores what the webhook's core makes of each Pod, Kubernetes ${version}`, () => {
  let call: ReturnType<typeof caller>;
  const admitted: (Call & { readonly input: Pod | undefined })[] = [];
  const group = `/apis/admissionregistration.k8s.io/${api}`;
  const nsOf = (i: number): string => `dc-${i}`;
  const createPod = (i: number, body: Pod): Promise<Call> =>
    call('POST', `/api/v1/namespaces/${nsOf(i)}/pods?dryRun=All`, body);

  before(async () => {
    call = caller(plane().cluster('runtime'));
    let policy: unknown;
    for (const [i, c] of cases.entries()) {
      const namespace = nsOf(i);
      const created = await call('POST', '/api/v1/namespaces', {
        metadata: { name: namespace, annotations: c.namespaceAnnotations },
      });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      // Rendered for the webhook's namespace (kyma-system, whose own Pods the policy leaves out and
      // where no case runs); each case's parameters are put into its own namespace.
      const m = renderAdmissionPolicy(parseWebhookConfig(configIn(c, namespace)), {
        apiVersion: api,
        revision: c.revision,
        trustBundleHash: c.trustBundleHash,
        trustBundleMount: c.trustBundleMount?.mount,
      });
      // The policy is one text for every config: only the parameters differ.
      if (policy === undefined) policy = m.policy;
      else assert.deepEqual(m.policy, policy, c.name);
      const params = { ...m.params, metadata: { ...(m.params.metadata as object), namespace } };
      assert.equal((await call('POST', `/api/v1/namespaces/${namespace}/configmaps`, params)).status, 201);
      // The Pod as admission gets it: defaulted by the API server, before any policy exists.
      const before = await createPod(i, c.pod);
      admitted.push({ ...before, input: before.status === 201 ? before.json : undefined });
    }
    const made = await call('POST', `${group}/mutatingadmissionpolicies`, policy);
    assert.equal(made.status, 201, JSON.stringify(made.json));
    // One binding per case, for its namespace and its parameters; the first case (the seed)
    // bound last, so once it mutates every binding is in force.
    for (let i = cases.length - 1; i >= 0; i--) {
      const namespace = nsOf(i);
      const binding = await call('POST', `${group}/mutatingadmissionpolicybindings`, {
        apiVersion: `admissionregistration.k8s.io/${api}`,
        kind: 'MutatingAdmissionPolicyBinding',
        metadata: { name: namespace },
        spec: {
          policyName: (policy as { metadata: { name: string } }).metadata.name,
          paramRef: {
            name: (policy as { metadata: { name: string } }).metadata.name,
            namespace,
            parameterNotFoundAction: 'Deny',
          },
          matchResources: {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          },
        },
      });
      assert.equal(binding.status, 201, JSON.stringify(binding.json));
    }
    await eventually(
      async () => {
        const stored = await createPod(0, cases[0]!.pod);
        return (stored.json as Pod).metadata?.annotations?.[ANNOTATION_DEFAULTED] === 'true'
          ? true
          : undefined;
      },
      60_000,
      'the bindings in force',
    );
  });

  test('every case: stored as mutatePod outputs it, or left alone where documented; refused where the API server refuses the webhook Pod too', async (t) => {
    const problems: string[] = [];
    let mutated = 0;
    let deferred = 0;
    let refused = 0;
    for (const [i, c] of cases.entries()) {
      const namespace = nsOf(i);
      const admittedBefore = admitted[i]!;
      const stored = await createPod(i, c.pod);
      const input = admittedBefore.input;
      if (input === undefined) {
        refused++;
        if (stored.status !== admittedBefore.status)
          problems.push(
            `${c.name}: refused without the policy (${admittedBefore.status}), ${stored.status} with it`,
          );
        continue;
      }
      const result = mutatePod({
        pod: input,
        operation: 'CREATE',
        namespace: { name: namespace, annotations: c.namespaceAnnotations },
        config: parseWebhookConfig(configIn(c, namespace)),
        pullSecretAvailable: true,
        revision: c.revision,
        trustBundleHash: c.trustBundleHash,
        trustBundleMount: c.trustBundleMount,
      });
      const defers = policyDefers(input, result, c);
      const expected = defers ? input : result.pod;
      if (defers) deferred++;
      else if (result.patch.length > 0) mutated++;
      if (stored.status !== 201) {
        problems.push(`${c.name}: refused with the policy: ${JSON.stringify(stored.json).slice(0, 400)}`);
        continue;
      }
      if (!isDeepStrictEqual(comparable(stored.json), comparable(expected)))
        problems.push(
          `${c.name}${defers ? ' (deferred)' : ''}:\n  stored   ${JSON.stringify(comparable(stored.json))}\n  expected ${JSON.stringify(comparable(expected))}`,
        );
      // Re-invocation: the policy's own result is a fixed point.
      if (!defers && result.patch.length > 0) {
        const again = await createPod(i, result.pod);
        if (!isDeepStrictEqual(comparable(again.json), comparable(result.pod)))
          problems.push(
            `${c.name}: a second pass changed the Pod: ${JSON.stringify(again.json).slice(0, 400)}`,
          );
      }
    }
    t.diagnostic(
      `${cases.length} cases: ${mutated} mutated, ${deferred} left to the webhook, ${refused} refused either way`,
    );
    assert.deepEqual(problems, []);
    // The tables exercise each outcome.
    assert.ok(mutated > 50, `mutated ${mutated}`);
    assert.ok(deferred >= 3, `deferred ${deferred}`);
    assert.ok(refused > 0, `refused ${refused}`);
  });
});
