// test-matrix: kubernetes
/**
 * Direct mode installs the admission policy where a runtime serves it (DESIGN.md §13), on real API
 * servers: `v1` on 1.37, `v1beta1` on 1.34 with its gate. No kubelet runs the webhook here, so its
 * registration fails open: a Pod the runtime stores mutated was mutated by the policy alone.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { defaultKubernetesVersion, KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import { impersonating } from '../../src/kube/impersonation.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { ADMISSION_POLICY_NAME } from '../../src/render/admission-policy.js';
import { webhookUserName } from '../../src/render/webhook-write-policy.js';
import { useControlPlane } from '../support/control-plane.js';
import { getIfExists } from '../support/get-if-exists.js';
import { conditionOf, DirectFleet } from '../support/direct-fleet.js';
import { RB_PATH } from '../support/kcp.js';

const ID = 'rt-policy';
const { api, apiserverArgs } = KUBERNETES_VERSIONS[defaultKubernetesVersion()].admissionPolicy;
const API_VERSION = `admissionregistration.k8s.io/${api}`;
// The API servers' audit of policy writes (in their logs): who wrote them, as the API server saw it.
const auditDir = mkdtempSync(join(tmpdir(), 'rtb-audit-'));
const auditPolicy = join(auditDir, 'policy.json');
writeFileSync(
  auditPolicy,
  JSON.stringify({
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [
      {
        level: 'Metadata',
        verbs: ['create', 'update', 'patch'],
        resources: [
          {
            group: 'admissionregistration.k8s.io',
            resources: ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'],
          },
        ],
      },
      { level: 'None' },
    ],
  }),
);
after(() => {
  rmSync(auditDir, { recursive: true, force: true });
});
const plane = useControlPlane({
  clusters: ['kcp', ID],
  apiserverArgs: [
    ...apiserverArgs,
    `--audit-policy-file=${auditPolicy}`,
    '--audit-log-path=-',
    '--audit-log-format=json',
  ],
});

/** An audit event of the runtime's API server, the fields read here. */
interface AuditEvent {
  readonly kind?: string;
  readonly verb?: string;
  readonly objectRef?: { readonly resource?: string; readonly name?: string };
  readonly user?: { readonly username?: string };
  readonly impersonatedUser?: { readonly username?: string };
  readonly responseStatus?: { readonly code?: number };
}

/** The runtime API server's audit events of policy writes (its log holds them as JSON lines). */
function policyWrites(): AuditEvent[] {
  return readFileSync(join(rt().dir, 'kube-apiserver.log'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"audit.k8s.io/v1"'))
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((e) => e.kind === 'Event');
}
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster(ID);
const fleet = new DirectFleet(kcp);

/** The runtime's object at `path`, or undefined once it is gone. */
const read = <T>(path: string): Promise<T | undefined> => getIfExists<T>(rt().kubeConfig(), path);

const policyPath = `/apis/${API_VERSION}/mutatingadmissionpolicies/${ADMISSION_POLICY_NAME}`;
const bindingPath = `/apis/${API_VERSION}/mutatingadmissionpolicybindings/${ADMISSION_POLICY_NAME}`;
const paramsPath = `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${ADMISSION_POLICY_NAME}`;

/** A dry-run create in kyma-system (every feature on there), as the runtime stores it. */
const created = (name: string): Promise<V1Pod> =>
  rt()
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({
      namespace: RUNTIME_NAMESPACE,
      dryRun: 'All',
      body: { metadata: { name }, spec: { containers: [{ name: 'app', image: 'replace.me/team/app:1' }] } },
    });

describe('direct mode: the admission policy where the runtime serves it', () => {
  fleet.use(() => ({ [ID]: rt() }), { runtimeTimeoutMs: 5_000 });

  test('installed with the set: the status names the API, and Pods are mutated with no webhook answering', async () => {
    await fleet.create(ID);
    const ready = await fleet.waitReady(ID, rt());
    assert.equal(ready.status?.admissionPolicyAPI, API_VERSION);
    assert.equal(conditionOf(ready, 'AdmissionPolicy')?.reason, 'Served');
    const params = await read<{ data?: Record<string, string> }>(paramsPath);
    assert.equal(params?.data?.revision, ready.status.appliedVersion, 'the parameters of the set applied');
    assert.ok(await read(policyPath), 'the policy');
    assert.ok(await read(bindingPath), 'its binding');
    assert.equal(await fleet.metric('rtb_runtimes_admission_path', { path: 'policy' }), 1);

    // The API server takes a new policy into its admission chain a moment after it is stored.
    const pod = await eventually(
      async () => {
        const p = await created('through-the-policy');
        return p.spec?.containers[0]?.image === 'ghcr.io/team/app:1' ? p : undefined;
      },
      30_000,
      'a Pod mutated by the policy',
    );
    assert.deepEqual(
      pod.spec?.imagePullSecrets?.map((s) => s.name),
      ['registry-credentials'],
    );
    assert.equal(pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/defaulted'], 'true');
  });

  test("the KCP writes policy and binding as the webhook's ServiceAccount, whose rights name only ours", async () => {
    const writes = policyWrites();
    assert.deepEqual(
      [...new Set(writes.map((e) => `${e.objectRef?.resource ?? ''}/${e.objectRef?.name ?? ''}`))].sort(),
      [
        `mutatingadmissionpolicies/${ADMISSION_POLICY_NAME}`,
        `mutatingadmissionpolicybindings/${ADMISSION_POLICY_NAME}`,
      ],
    );
    for (const e of writes) {
      assert.equal(
        e.impersonatedUser?.username,
        webhookUserName(RUNTIME_NAMESPACE),
        `${e.verb ?? ''} ${e.objectRef?.resource ?? ''} by ${e.user?.username ?? ''}`,
      );
      assert.ok((e.responseStatus?.code ?? 0) < 300, `answered ${e.responseStatus?.code ?? 0}`);
    }
    // The API server bounds that identity: a policy of another name is refused to it.
    const other = {
      apiVersion: API_VERSION,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name: 'not-ours' },
      spec: { failurePolicy: 'Ignore', matchConstraints: { resourceRules: [] }, mutations: [] },
    };
    await assert.rejects(
      kubeRequest(impersonating(rt().kubeConfig(), webhookUserName(RUNTIME_NAMESPACE)), {
        method: 'PATCH',
        path: `/apis/${API_VERSION}/mutatingadmissionpolicies/not-ours`,
        query: { fieldManager: 'probe', force: 'true' },
        contentType: 'application/apply-patch+yaml',
        body: other,
      }),
      (error: unknown) => statusCodeOf(error) === 403,
    );
  });

  test('removed with the runtime: policy, binding and parameters are gone', async () => {
    await kubeRequest(kcp().kubeConfig(), { method: 'DELETE', path: `${RB_PATH}/${ID}` });
    await eventually(
      async () =>
        (await read(policyPath)) === undefined &&
        (await read(bindingPath)) === undefined &&
        (await read(paramsPath)) === undefined
          ? true
          : undefined,
      30_000,
      'the policy removed',
    );
    const pod = await created('after-removal');
    assert.equal(pod.spec?.containers[0]?.image, 'replace.me/team/app:1');
  });
});
