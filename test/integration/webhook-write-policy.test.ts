// test-matrix: kubernetes
/**
 * The ValidatingAdmissionPolicy narrowing the webhook ServiceAccount's writes
 * (src/render/webhook-write-policy.ts) on a real API server: the rendered manifests applied, then
 * the ServiceAccount (a client certificate with its user name, so exactly the rendered RBAC and
 * the policy apply) writes what the restarter and the Pod labelling write, and what an attacker
 * holding its token would.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../src/api/runtime-names.js';
import {
  CTB_HASH_ANNOTATION,
  CTB_MOUNTED_LABEL,
  TRUST_STATUS_ANNOTATION,
  trustBundleHash,
} from '../../src/api/trust-stamp.js';
import { eventually } from '../../src/envtest/eventually.js';
import { applyObjects } from '../../src/kube/apply.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { useControlPlane } from '../support/control-plane.js';
import { asWebhookServiceAccount } from '../support/kcp.js';
import { unregisteredWebhookObjects } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const NS = 'apps';
const HASH = trustBundleHash('a bundle');
const POLICY_SAYS = /rt-bootstrapper's ServiceAccount/;

const workloadPath = (resource: string, name: string, namespace = NS): string =>
  `/apis/apps/v1/namespaces/${namespace}/${resource}/${name}`;
const podPath = (name: string): string => `/api/v1/namespaces/${NS}/pods/${name}`;

const template = {
  metadata: { labels: { app: 'x' }, annotations: { keep: 'me' } },
  spec: { containers: [{ name: 'app', image: 'example.com/app:1' }] },
};
const selector = { matchLabels: { app: 'x' } };

/** The restarter's write: server-side apply of the template annotation, forced, under its field manager. */
const annotateTemplate = (
  kind: string,
  name: string,
  hash: string,
  namespace = NS,
): Record<string, unknown> => ({
  apiVersion: 'apps/v1',
  kind,
  metadata: { name, namespace },
  spec: { template: { metadata: { annotations: { [CTB_HASH_ANNOTATION]: hash } } } },
});

describe('the write policy on a real API server: what the webhook ServiceAccount may change', () => {
  let admin: KubeConfig;
  let sa: KubeConfig;

  const write = (
    kc: KubeConfig,
    path: string,
    body: unknown,
    contentType = 'application/merge-patch+json',
    query: Record<string, string | boolean> = {},
  ): Promise<unknown> =>
    kubeRequest(kc, { method: 'PATCH', path, body, contentType, query, timeoutMs: 10_000 });
  const apply = (kc: KubeConfig, path: string, body: unknown): Promise<unknown> =>
    write(kc, path, body, 'application/apply-patch+yaml', {
      fieldManager: 'rt-bootstrapper-trust-restarter',
      force: true,
    });
  /** The write is refused by the policy (422 Invalid, or 403 Forbidden), naming it. */
  const refused = async (what: string, p: Promise<unknown>): Promise<void> => {
    await assert.rejects(p, (err: unknown) => {
      const code = statusCodeOf(err);
      assert.ok(code === 403 || code === 422, `${what}: HTTP ${String(code)} ${String(err)}`);
      assert.match(String(err), POLICY_SAYS, what);
      assert.match(String(err), /rt-bootstrapper-webhook-writes/, what);
      return true;
    });
  };

  before(async () => {
    const cluster = plane().cluster('runtime');
    admin = cluster.kubeConfig();
    // Everything but the registration (it would point at nothing here).
    await applyObjects(admin, [
      ...unregisteredWebhookObjects(),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: NS },
        spec: { replicas: 1, selector, template },
      } as KubernetesObject,
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'db', namespace: NS },
        spec: { replicas: 1, serviceName: 'db', selector, template },
      } as KubernetesObject,
      {
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name: 'agent', namespace: NS },
        spec: { selector, template },
      } as KubernetesObject,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'app', namespace: NS, labels: { app: 'x' } },
        spec: { containers: [{ name: 'app', image: 'example.com/app:1' }] },
      } as KubernetesObject,
    ]);
    sa = await asWebhookServiceAccount(cluster);
    // The policy is in force once the API server's informer has it: wait for a first refusal.
    await eventually(
      async () => {
        try {
          await write(sa, podPath('app'), { metadata: { labels: { other: 'label' } } });
        } catch (err) {
          if (POLICY_SAYS.test(String(err))) return true;
          throw err;
        }
        await write(admin, podPath('app'), { metadata: { labels: { other: null } } });
        throw new Error('the policy is not in force yet');
      },
      30_000,
      'the write policy to be in force',
    );
  });

  test('the restarter may annotate the Pod template of each rollable kind, and again with a new hash', async () => {
    for (const [kind, resource, name] of [
      ['Deployment', 'deployments', 'web'],
      ['StatefulSet', 'statefulsets', 'db'],
      ['DaemonSet', 'daemonsets', 'agent'],
    ] as const) {
      for (const hash of [HASH, trustBundleHash('the next bundle')]) {
        await apply(sa, workloadPath(resource, name), annotateTemplate(kind, name, hash));
        const found = await kubeRequest<{
          spec: { template: { metadata: { annotations: Record<string, string> } } };
        }>(admin, { method: 'GET', path: workloadPath(resource, name) });
        assert.equal(found.spec.template.metadata.annotations[CTB_HASH_ANNOTATION], hash, kind);
        assert.equal(found.spec.template.metadata.annotations.keep, 'me', kind);
      }
    }
  });

  test('and write the restart status on its own Deployment, but on no other', async () => {
    const status = {
      metadata: { annotations: { [TRUST_STATUS_ANNOTATION]: '{"bundle":"x","stalePods":0}' } },
    };
    await write(sa, workloadPath('deployments', WEBHOOK_DEPLOYMENT, RUNTIME_NAMESPACE), status);
    await refused('status annotation elsewhere', write(sa, workloadPath('deployments', 'web'), status));
  });

  test('changing a container image, a label, the replicas or another template annotation is refused', async () => {
    const image = {
      spec: { template: { spec: { containers: [{ name: 'app', image: 'evil.example.com/miner:1' }] } } },
    };
    for (const resource of ['deployments', 'statefulsets', 'daemonsets'] as const) {
      const name = resource === 'deployments' ? 'web' : resource === 'statefulsets' ? 'db' : 'agent';
      await refused(`${resource} image`, write(sa, workloadPath(resource, name), image));
      await refused(
        `${resource} template annotation`,
        write(sa, workloadPath(resource, name), {
          spec: { template: { metadata: { annotations: { keep: 'no' } } } },
        }),
      );
    }
    // Also the image of our own Deployment, and with the hash annotation as cover.
    await refused(
      'own Deployment image',
      write(sa, workloadPath('deployments', WEBHOOK_DEPLOYMENT, RUNTIME_NAMESPACE), {
        spec: { template: { spec: { containers: [{ name: 'manager', image: 'evil.example.com/x:1' }] } } },
      }),
    );
    await refused(
      'image beside the hash',
      write(sa, workloadPath('deployments', 'web'), {
        spec: {
          template: {
            metadata: { annotations: { [CTB_HASH_ANNOTATION]: HASH } },
            spec: { containers: [{ name: 'app', image: 'evil.example.com/miner:1' }] },
          },
        },
      }),
    );
    await refused(
      'template label',
      write(sa, workloadPath('deployments', 'web'), {
        spec: { template: { metadata: { labels: { x: 'y' } } } },
      }),
    );
    await refused('replicas', write(sa, workloadPath('deployments', 'web'), { spec: { replicas: 5 } }));
    await refused(
      'a workload label',
      write(sa, workloadPath('deployments', 'web'), {
        metadata: { labels: { [CTB_MOUNTED_LABEL]: 'true' } },
      }),
    );
    await refused(
      'a hash that is no hash',
      apply(sa, workloadPath('deployments', 'web'), annotateTemplate('Deployment', 'web', 'not-a-hash')),
    );
    // What the ServiceAccount may not write, an administrator still may.
    await write(admin, workloadPath('deployments', 'web'), image);
  });

  test('on a Pod, our label is allowed; any other label, annotation or spec change is refused', async () => {
    await write(sa, podPath('app'), { metadata: { labels: { [CTB_MOUNTED_LABEL]: 'true' } } });
    const pod = await kubeRequest<{ metadata: { labels: Record<string, string> } }>(admin, {
      method: 'GET',
      path: podPath('app'),
    });
    assert.equal(pod.metadata.labels[CTB_MOUNTED_LABEL], 'true');
    await refused('another label', write(sa, podPath('app'), { metadata: { labels: { app: 'y' } } }));
    await refused(
      'our label, another value',
      write(sa, podPath('app'), { metadata: { labels: { [CTB_MOUNTED_LABEL]: 'yes' } } }),
    );
    await refused('an annotation', write(sa, podPath('app'), { metadata: { annotations: { a: 'b' } } }));
    await refused(
      'the image',
      write(sa, podPath('app'), {
        spec: { containers: [{ name: 'app', image: 'evil.example.com/miner:1' }] },
      }),
    );
    await refused('the deadline', write(sa, podPath('app'), { spec: { activeDeadlineSeconds: 5 } }));
  });

  test('a Pod created by the ServiceAccount must be a dry run (the projection probe)', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'probe', namespace: RUNTIME_NAMESPACE },
      spec: { containers: [{ name: 'probe', image: 'example.com/probe:1' }] },
    };
    const path = `/api/v1/namespaces/${RUNTIME_NAMESPACE}/pods`;
    await kubeRequest(sa, { method: 'POST', path, query: { dryRun: 'All' }, body: pod });
    await refused('a stored Pod', kubeRequest(sa, { method: 'POST', path, body: pod }));
  });

  test('the policy type-checks against the served schemas without a warning', async () => {
    const found = await kubeRequest<{ status?: { typeChecking?: { expressionWarnings?: unknown[] } } }>(
      admin,
      {
        method: 'GET',
        path: '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/rt-bootstrapper-webhook-writes',
      },
    );
    assert.deepEqual(found.status?.typeChecking?.expressionWarnings ?? [], []);
  });
});

describe('restart rights per namespace on a real API server (rtb render webhook --restart-namespaces)', () => {
  test('the ServiceAccount restarts in the listed namespaces only, and still writes its status', async () => {
    const cluster = plane().cluster('runtime');
    const admin = cluster.kubeConfig();
    const objects = unregisteredWebhookObjects({ restartNamespaces: [NS] });
    await applyObjects(admin, [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'unlisted' } },
      ...objects,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'unlisted' },
        spec: { replicas: 1, selector, template },
      } as KubernetesObject,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: NS },
        spec: { replicas: 1, selector, template },
      } as KubernetesObject,
    ]);
    const sa = await asWebhookServiceAccount(cluster);
    const apply = (namespace: string, hash: string): Promise<unknown> =>
      kubeRequest(sa, {
        method: 'PATCH',
        path: workloadPath('deployments', 'web', namespace),
        body: annotateTemplate('Deployment', 'web', hash, namespace),
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: 'rt-bootstrapper-trust-restarter', force: true },
      });
    const hash = trustBundleHash('per-namespace');
    await eventually(() => apply(NS, hash).then(() => true), 15_000, 'the Role in the listed namespace');
    // RBAC, not the policy: the ClusterRole no longer grants it (the change reaches the
    // authorizer's cache within moments).
    await eventually(
      async () => {
        try {
          await apply('unlisted', hash);
        } catch (err) {
          if (statusCodeOf(err) === 403 && !POLICY_SAYS.test(String(err))) return true;
          throw err;
        }
        throw new Error('still allowed');
      },
      15_000,
      'the unlisted namespace to be refused',
    );
    await assert.rejects(
      kubeRequest(sa, {
        method: 'GET',
        path: '/apis/apps/v1/namespaces/unlisted/replicasets',
      }),
      /forbidden/i,
    );
    await kubeRequest(sa, {
      method: 'PATCH',
      path: workloadPath('deployments', WEBHOOK_DEPLOYMENT, RUNTIME_NAMESPACE),
      body: { metadata: { annotations: { [TRUST_STATUS_ANNOTATION]: '{"bundle":"y","stalePods":0}' } } },
    });
  });
});
