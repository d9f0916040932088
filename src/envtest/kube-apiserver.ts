import { join } from 'node:path';
import type { ClusterPkiFiles } from './cluster-pki.js';
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
  extraArgs?: readonly string[];
}

/**
 * The flags of a kube-apiserver that behaves like a Kyma runtime for this project:
 * ClusterTrustBundle (beta API and projection) on, RBAC, no controller-manager, so the
 * ServiceAccount admission plugin is off and the endpoint reconciler is disabled.
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
    '--service-cluster-ip-range=10.0.0.0/24',
    '--authorization-mode=RBAC',
    '--disable-admission-plugins=ServiceAccount',
    '--feature-gates=ClusterTrustBundle=true,ClusterTrustBundleProjection=true',
    '--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true',
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
