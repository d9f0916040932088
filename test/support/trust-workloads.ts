/**
 * Workloads for the trust-restart tests on an API server without controllers or kubelet: the
 * test creates each owner, its ReplicaSet and its Pods (stamped as our admission stamps them),
 * and plays the controllers' part of a rollout when it says so (status reported as the
 * deployment controller would, ../../src/local/simulated-kubelet.ts for Deployments; Pods
 * replaced by ones stamped with the new hash).
 */
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1OwnerReference,
  type V1Pod,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL, trustBundleHash } from '../../src/api/trust-stamp.js';
import { reportDeploymentRollout } from '../../src/local/simulated-kubelet.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { putTrustBundle } from './trust-bundles.js';

/** The bundle the seed config names. */
export const BUNDLE = 'rt-bootstrapper-k3d.test:ctb:1';
const SIGNER = 'rt-bootstrapper-k3d.test/ctb';

/** A new PEM and its stamp. */
export async function newBundleText(): Promise<{ pem: string; hash: string }> {
  const ca = await createCertificateAuthority({ commonName: `trust-${Math.random().toString(36).slice(2)}` });
  return { pem: ca.certPem, hash: trustBundleHash(ca.certPem) };
}

/** Creates or replaces the bundle's content (at the version the cluster serves). */
export async function putBundle(kc: KubeConfig, pem: string): Promise<void> {
  await putTrustBundle(kc, BUNDLE, { signerName: SIGNER, trustBundle: pem });
}

export type Kind = 'Deployment' | 'StatefulSet' | 'DaemonSet';

const template = (app: string, annotations: Record<string, string> = {}): V1PodTemplateSpec => ({
  metadata: { labels: { app }, annotations },
  spec: { containers: [{ name: 'app', image: 'example.com/app:1' }] },
});

/** What {@link stampedPod} makes. */
export interface StampOptions {
  readonly hash?: string;
  readonly owner?: V1OwnerReference;
  readonly app?: string;
  readonly annotations?: Record<string, string>;
  /** As an upstream install stamps: the bundle's projected volume and the stamp, not our label. */
  readonly upstream?: boolean;
}

/** A Pod as our admission leaves it: the mount label, and the stamp when `hash` is given. */
export function stampedPod(name: string, o: StampOptions = {}): V1Pod {
  const app: Record<string, string> = o.app ? { app: o.app } : {};
  return {
    metadata: {
      name,
      labels: o.upstream ? app : { [CTB_MOUNTED_LABEL]: 'true', ...app },
      annotations: { ...o.annotations, ...(o.hash ? { [CTB_HASH_ANNOTATION]: o.hash } : {}) },
      ...(o.owner ? { ownerReferences: [o.owner] } : {}),
    },
    spec: {
      containers: [{ name: 'app', image: 'example.com/app:1' }],
      ...(o.upstream
        ? {
            volumes: [
              {
                name: 'rt-bootstrapper-certs',
                projected: {
                  sources: [{ clusterTrustBundle: { name: BUNDLE, path: 'kube-apiserver-serving.pem' } }],
                },
              },
            ],
          }
        : {}),
    },
  };
}

const ref = (apiVersion: string, kind: string, name: string, uid: string | undefined): V1OwnerReference => ({
  apiVersion,
  kind,
  name,
  uid: uid ?? '',
  controller: true,
});

/** The test's hand on one cluster's workloads. */
export class Workloads {
  readonly apps: AppsV1Api;
  readonly core: CoreV1Api;

  constructor(readonly kc: KubeConfig) {
    this.apps = kc.makeApiClient(AppsV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** A workload with `pods` Pods stamped `hash`; a Deployment's through a ReplicaSet. */
  async create(
    kind: Kind,
    namespace: string,
    name: string,
    pods: number,
    hash: string,
    o: {
      annotations?: Record<string, string>;
      templateAnnotations?: Record<string, string>;
      /** Its Pods as an upstream install stamps them (no label). */
      upstream?: boolean;
    } = {},
  ): Promise<void> {
    const metadata = { name, ...(o.annotations ? { annotations: o.annotations } : {}) };
    const selector = { matchLabels: { app: name } };
    const tpl = template(name, o.templateAnnotations);
    let owner: V1OwnerReference;
    if (kind === 'Deployment') {
      const d = await this.apps.createNamespacedDeployment({
        namespace,
        body: { metadata, spec: { replicas: pods, selector, template: tpl } },
      });
      await reportDeploymentRollout(this.kc, namespace, name, true);
      owner = await this.replicaSet(namespace, `${name}-1`, name, d.metadata?.uid, pods);
    } else if (kind === 'StatefulSet') {
      const s = await this.apps.createNamespacedStatefulSet({
        namespace,
        body: { metadata, spec: { replicas: pods, selector, serviceName: name, template: tpl } },
      });
      owner = ref('apps/v1', kind, name, s.metadata?.uid);
    } else {
      const s = await this.apps.createNamespacedDaemonSet({
        namespace,
        body: { metadata, spec: { selector, template: tpl } },
      });
      owner = ref('apps/v1', kind, name, s.metadata?.uid);
    }
    await this.report(kind, namespace, name, pods);
    for (let i = 0; i < pods; i++)
      await this.core.createNamespacedPod({
        namespace,
        body: stampedPod(`${name}-${i}`, { hash, owner, app: name, upstream: o.upstream ?? false }),
      });
  }

  private async replicaSet(
    namespace: string,
    name: string,
    deployment: string,
    uid: string | undefined,
    replicas: number,
  ): Promise<V1OwnerReference> {
    const rs = await this.apps.createNamespacedReplicaSet({
      namespace,
      body: {
        metadata: { name, ownerReferences: [ref('apps/v1', 'Deployment', deployment, uid)] },
        spec: { replicas, selector: { matchLabels: { app: deployment } }, template: template(deployment) },
      },
    });
    return ref('apps/v1', 'ReplicaSet', name, rs.metadata?.uid);
  }

  /** Reports the workload's current generation rolled out, as its controller would. */
  async report(kind: Kind, namespace: string, name: string, replicas: number): Promise<void> {
    if (kind === 'Deployment') {
      await reportDeploymentRollout(this.kc, namespace, name, true);
      return;
    }
    if (kind === 'StatefulSet') {
      const s = await this.apps.readNamespacedStatefulSet({ name, namespace });
      s.status = {
        observedGeneration: s.metadata?.generation ?? 1,
        replicas,
        updatedReplicas: replicas,
        readyReplicas: replicas,
        availableReplicas: replicas,
      };
      await this.apps.replaceNamespacedStatefulSetStatus({ name, namespace, body: s });
      return;
    }
    const d = await this.apps.readNamespacedDaemonSet({ name, namespace });
    d.status = {
      observedGeneration: d.metadata?.generation ?? 1,
      currentNumberScheduled: replicas,
      desiredNumberScheduled: replicas,
      numberMisscheduled: 0,
      numberReady: replicas,
      updatedNumberScheduled: replicas,
      numberAvailable: replicas,
    };
    await this.apps.replaceNamespacedDaemonSetStatus({ name, namespace, body: d });
  }

  /** The controllers' part of a rollout: old Pods replaced by Pods stamped `hash`, status reported. */
  async completeRollout(kind: Kind, namespace: string, name: string, hash: string): Promise<void> {
    const old = await this.core.listNamespacedPod({ namespace, labelSelector: `app=${name}` });
    const owner = old.items[0]?.metadata?.ownerReferences?.[0];
    let newOwner = owner;
    if (kind === 'Deployment') {
      const d = await this.apps.readNamespacedDeployment({ name, namespace });
      newOwner = await this.replicaSet(
        namespace,
        `${name}-${d.metadata?.generation ?? 2}`,
        name,
        d.metadata?.uid,
        old.items.length,
      );
    }
    for (const p of old.items)
      await this.core.deleteNamespacedPod({ namespace, name: p.metadata?.name ?? '', gracePeriodSeconds: 0 });
    for (const [i] of old.items.entries())
      await this.core.createNamespacedPod({
        namespace,
        body: stampedPod(`${name}-new-${i}-${hash.slice(0, 6)}`, {
          hash,
          ...(newOwner ? { owner: newOwner } : {}),
          app: name,
        }),
      });
    await this.report(kind, namespace, name, old.items.length);
  }

  /** The hash on the workload's Pod template, and its generation. */
  async template(
    kind: Kind,
    namespace: string,
    name: string,
  ): Promise<{ hash?: string; generation: number }> {
    const w =
      kind === 'Deployment'
        ? await this.apps.readNamespacedDeployment({ name, namespace })
        : kind === 'StatefulSet'
          ? await this.apps.readNamespacedStatefulSet({ name, namespace })
          : await this.apps.readNamespacedDaemonSet({ name, namespace });
    const hash = w.spec?.template.metadata?.annotations?.[CTB_HASH_ANNOTATION];
    return { ...(hash !== undefined ? { hash } : {}), generation: w.metadata?.generation ?? 0 };
  }

  /** Reports a Pod running and ready, as its kubelet would. */
  async markRunning(namespace: string, name: string): Promise<void> {
    const pod = await this.core.readNamespacedPod({ name, namespace });
    pod.status = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date() }],
    };
    await this.core.replaceNamespacedPodStatus({ name, namespace, body: pod });
  }

  /** Pods of a namespace, by name. */
  async podNames(namespace: string): Promise<string[]> {
    return (await this.core.listNamespacedPod({ namespace })).items.map((p) => p.metadata?.name ?? '').sort();
  }

  /** Deletes the namespace's Pods (no namespace controller runs here to do it). */
  async clear(namespace: string): Promise<void> {
    await this.core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
  }
}
