import { join } from 'node:path';
import type { ClusterPkiFiles } from './cluster-pki.js';
import { versionApiserverArgs, type KubernetesVersion } from './kubernetes-versions.js';
import { ManagedProcess } from './managed-process.js';
import { waitReady, type ProbeTls } from './wait-ready.js';

/** What one kube-apiserver needs to start. */
export interface KubeApiserverOptions {
  binary: string;
  dir: string;
  etcdUrl: string;
  etcdPrefix: string;
  port: number;
  pki: ClusterPkiFiles;
  /** The minor of `binary`: it picks the ClusterTrustBundle flags (KUBERNETES_VERSIONS). */
  kubernetes: KubernetesVersion;
  /** false: the projection gate off, so projected clusterTrustBundle sources are dropped. */
  clusterTrustBundleProjection?: boolean;
  /** Appended last: a repeated `--feature-gates` or `--runtime-config` merges into the earlier one. */
  extraArgs?: readonly string[];
  /**
   * This cluster gets a node (kubelet, controller-manager, scheduler): the Node authorizer and
   * NodeRestriction, the ServiceAccount admission plugin (Pods get tokens), and this Service range.
   */
  node?: { readonly serviceCidr: string };
}

/**
 * The flags of a kube-apiserver that behaves like a Kyma runtime for this project:
 * ClusterTrustBundle and its projection on as the minor needs them, RBAC, the endpoint reconciler disabled;
 * without a node no controller-manager runs, so the ServiceAccount admission plugin is off.
 */
export function kubeApiserverArgs(o: KubeApiserverOptions): string[] {
  return [
    `--etcd-servers=${o.etcdUrl}`,
    `--etcd-prefix=${o.etcdPrefix}`,
    `--secure-port=${o.port}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    '--endpoint-reconciler-type=none',
    `--tls-cert-file=${o.pki.servingCert}`,
    `--tls-private-key-file=${o.pki.servingKey}`,
    `--client-ca-file=${o.pki.caCert}`,
    `--service-account-key-file=${o.pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${o.pki.serviceAccountKey}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-cluster-ip-range=${o.node?.serviceCidr ?? '10.0.0.0/24'}`,
    ...(o.node
      ? [
          '--authorization-mode=Node,RBAC',
          '--enable-admission-plugins=NodeRestriction',
          // Webhooks and aggregated APIs are called on an endpoint's Pod IP: no kube-proxy runs.
          '--enable-aggregator-routing=true',
          // The node's name resolves nowhere; its InternalIP is the bridge's address.
          '--kubelet-preferred-address-types=InternalIP',
          `--kubelet-client-certificate=${o.pki.kubeletClientCert}`,
          `--kubelet-client-key=${o.pki.kubeletClientKey}`,
        ]
      : ['--authorization-mode=RBAC', '--disable-admission-plugins=ServiceAccount']),
    ...versionApiserverArgs(o.kubernetes, { clusterTrustBundleProjection: o.clusterTrustBundleProjection }),
    '--allow-privileged=true',
    '--profiling=false',
    `--cert-dir=${join(o.dir, 'cert-dir')}`,
    ...(o.extraArgs ?? []),
  ];
}

/** Starts a kube-apiserver and waits until `/readyz` answers 200. */
export async function startKubeApiserver(
  o: KubeApiserverOptions,
  readyTls: ProbeTls,
  timeoutMs = 90_000,
): Promise<ManagedProcess> {
  const proc = new ManagedProcess(
    `kube-apiserver(${o.etcdPrefix})`,
    o.binary,
    kubeApiserverArgs(o),
    join(o.dir, 'kube-apiserver.log'),
  );
  proc.start();
  try {
    await waitReady(proc, `https://127.0.0.1:${o.port}/readyz`, readyTls, timeoutMs);
  } catch (error) {
    await proc.stop(2_000);
    throw error;
  }
  return proc;
}
