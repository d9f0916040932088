import {
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import {
  runtimeBootstrappersPath,
  newRuntimeBootstrapper,
  type RuntimeBootstrapper,
} from '../../src/api/runtime-bootstrapper.js';
import { runtimeBootstrapperCrd } from '../../src/api/runtime-bootstrapper-crd.js';
import {
  RUNTIME_NAMESPACE,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_SERVICE_ACCOUNT,
} from '../../src/api/runtime-names.js';
import type { DirectModeOptions } from '../../src/controller/direct/direct-mode-options.js';
import { createSourceWatcher } from '../../src/controller/sources/source-set.js';
import type { SourceWatcher } from '../../src/controller/sources/source-watcher.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import type { Logger } from '../../src/telemetry/logger.js';
import { renderKubeconfig } from '../../src/envtest/kubeconfig.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { applyObjects } from '../../src/kube/apply.js';
import { markDeploymentAvailable as markAvailable } from '../../src/local/simulated-kubelet.js';
import { ControlPlaneError } from '../../src/envtest/errors.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from './fixtures.js';
import { trustBundleObject } from './trust-bundles.js';

/** The seed's trust bundle name and its signer. */
export const CTB_NAME = 'rt-bootstrapper-k3d.test:ctb:1';
export const CTB_SIGNER = 'rt-bootstrapper-k3d.test/ctb';
/** The KCP's pull Secret name in tests. */
export const KCP_PULL_SECRET = 'registry-credentials';
/** The KCP's RuntimeBootstrappers. */
export const RB_PATH = runtimeBootstrappersPath('kcp-system');

/** Base64 of a dockerconfigjson with a recognisable auth value. */
export const dockerConfig = (auth: string): Record<string, string> => ({
  '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { 'ghcr.io': { auth } } })).toString('base64'),
});

/**
 * A kubeconfig for `cluster` with a client certificate for user `user` (groups optional),
 * reaching it at `server` (default its own address; a TCP front of it keeps its certificate).
 */
export async function kubeconfigFor(
  cluster: LocalCluster,
  user: string,
  groups: string[] = [],
  server = cluster.server,
): Promise<string> {
  const id = await issueCertificate(cluster.ca, { commonName: user, organizations: groups, usage: 'client' });
  return renderKubeconfig({
    name: cluster.name,
    server,
    caPem: cluster.caPem,
    clientCertPem: id.certPem,
    clientKeyPem: id.keyPem,
  });
}

/** A client of `cluster` acting as `user` (groups optional). */
export async function clientAs(
  cluster: LocalCluster,
  user: string,
  groups: string[] = [],
): Promise<KubeConfig> {
  const kc = new KubeConfig();
  kc.loadFromString(await kubeconfigFor(cluster, user, groups));
  return kc;
}

/**
 * A client with the webhook ServiceAccount's identity: the API server maps a client
 * certificate's CN to the user name, so exactly the rendered RBAC applies.
 */
export function asWebhookServiceAccount(cluster: LocalCluster): Promise<KubeConfig> {
  return clientAs(cluster, `system:serviceaccount:${RUNTIME_NAMESPACE}:${WEBHOOK_SERVICE_ACCOUNT}`, [
    'system:serviceaccounts',
    `system:serviceaccounts:${RUNTIME_NAMESPACE}`,
  ]);
}

/** Makes `user` cluster-admin on `cluster` through a ClusterRoleBinding named after it. */
export async function bindClusterAdmin(cluster: LocalCluster, user: string): Promise<void> {
  await cluster
    .kubeConfig()
    .makeApiClient(RbacAuthorizationV1Api)
    .createClusterRoleBinding({
      body: {
        metadata: { name: `test-${user}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
}

/** KIM's kubeconfig Secret of a runtime on the KCP. */
export function kubeconfigSecret(runtimeId: string, kubeconfig: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `kubeconfig-${runtimeId}`,
      namespace: 'kcp-system',
      labels: { 'kyma-project.io/runtime-id': runtimeId, 'operator.kyma-project.io/kyma-name': runtimeId },
    },
    data: { config: Buffer.from(kubeconfig).toString('base64') },
  } as KubernetesObject;
}

/** Writes (creates or replaces) KIM's kubeconfig Secret of a runtime on the KCP. */
export async function putKubeconfigSecret(
  kcp: LocalCluster,
  runtimeId: string,
  kubeconfig: string,
): Promise<void> {
  await applyObjects(kcp.kubeConfig(), [kubeconfigSecret(runtimeId, kubeconfig)]);
}

/** The KCP's three sources: pull Secret, ClusterTrustBundle, webhook ConfigMap (the seed's). */
export async function putSources(
  kcp: LocalCluster,
  opts: { auth?: string; configText?: string } = {},
): Promise<void> {
  const ca = await createCertificateAuthority({ commonName: 'landscape CA' });
  const bundle = await trustBundleObject(kcp.kubeConfig(), CTB_NAME, {
    signerName: CTB_SIGNER,
    trustBundle: ca.certPem,
  });
  await applyObjects(kcp.kubeConfig(), [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kcp-system' } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: KCP_PULL_SECRET, namespace: 'kcp-system' },
      type: 'kubernetes.io/dockerconfigjson',
      data: dockerConfig(opts.auth ?? 'v1'),
    } as KubernetesObject,
    bundle,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
      data: { 'rt-bootstrapper-config.json': opts.configText ?? seedConfigText() },
    } as KubernetesObject,
  ]);
}

/** Replaces the KCP's pull Secret with one whose auth is `auth` (server-side apply). */
export async function putPullSecret(kcp: LocalCluster, auth: string): Promise<void> {
  await applyObjects(kcp.kubeConfig(), [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: KCP_PULL_SECRET, namespace: 'kcp-system' },
      type: 'kubernetes.io/dockerconfigjson',
      data: dockerConfig(auth),
    } as KubernetesObject,
  ]);
}

/** Readies the KCP for direct mode: the RuntimeBootstrapper CRD, then the three sources. */
export async function prepareKcp(kcp: LocalCluster): Promise<void> {
  await ensureCrds(kcp.kubeConfig(), [runtimeBootstrapperCrd()]);
  await putSources(kcp);
}

/** Writes the kubeconfig Secret of runtime `id` with a system:masters identity (`rtb-controller`). */
export async function putAdminKubeconfigSecret(
  kcp: LocalCluster,
  runtime: LocalCluster,
  id: string,
): Promise<void> {
  await putKubeconfigSecret(kcp, id, await kubeconfigFor(runtime, 'rtb-controller', ['system:masters']));
}

/** A started source watcher on the KCP's three sources (see {@link putSources}). */
export async function startKcpSources(kcp: LocalCluster, logger: Logger): Promise<SourceWatcher> {
  const sources = createSourceWatcher({
    kubeConfig: kcp.kubeConfig(),
    namespace: 'kcp-system',
    pullSecretName: KCP_PULL_SECRET,
    clusterTrustBundleName: CTB_NAME,
    configMapName: 'rt-bootstrapper-config',
    logger,
  });
  await sources.start();
  return sources;
}

/** Direct mode's settings in tests: release 1.0.0, no resync, a 100 ms coalesce window; `more` adds or overrides. */
export function directModeOptions(
  kcp: LocalCluster,
  sources: SourceWatcher,
  logger: Logger,
  more: Partial<DirectModeOptions> = {},
): DirectModeOptions {
  return {
    kubeConfig: kcp.kubeConfig(),
    namespace: 'kcp-system',
    sources,
    logger,
    registry: new Registry(),
    release: { image: 'example.com/rt-bootstrapper:1.0.0', version: '1.0.0' },
    resyncMs: 0,
    coalesceMs: 100,
    ...more,
  };
}

/** Creates the RuntimeBootstrapper of runtime `id` on the KCP (named after it, annotations optional). */
export async function createRuntimeBootstrapper(
  kcp: LocalCluster,
  id: string,
  annotations?: Record<string, string>,
): Promise<void> {
  await kubeRequest(kcp.kubeConfig(), {
    method: 'POST',
    path: RB_PATH,
    body: newRuntimeBootstrapper(id, 'kcp-system', annotations === undefined ? {} : { annotations }),
  });
}

/** Replaces a source object's content on the KCP (server-side apply). */
export async function apply(cluster: LocalCluster, objects: KubernetesObject[]): Promise<void> {
  await applyObjects(cluster.kubeConfig(), objects);
}

/** Replaces the KCP's webhook ConfigMap with `configText`. */
export async function putKcpConfig(kcp: LocalCluster, configText: string): Promise<void> {
  await apply(kcp, [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
      data: { 'rt-bootstrapper-config.json': configText },
    } as KubernetesObject,
  ]);
}

/** Sets the webhook Deployment's status the way the deployment controller and kubelet would. */
export async function markDeploymentAvailable(runtime: LocalCluster): Promise<void> {
  if (!(await markAvailable(runtime.kubeConfig(), RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT))) {
    throw new Error(`no webhook Deployment on ${runtime.name}`);
  }
}

/**
 * Without a kubelet: reports the webhook Deployment of each of `runtimes` available whenever it
 * exists, every 300 ms, until the returned stop is called.
 */
export function keepDeploymentsAvailable(runtimes: () => readonly LocalCluster[]): () => void {
  const timer = setInterval(() => {
    for (const c of runtimes())
      void markAvailable(c.kubeConfig(), RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT).catch(() => false);
  }, 300);
  return () => {
    clearInterval(timer);
  };
}

/** Core client of a cluster. */
export const coreOf = (c: LocalCluster): CoreV1Api => c.kubeConfig().makeApiClient(CoreV1Api);

/** The RuntimeBootstrappers on the KCP. */
export async function listRuntimeBootstrappers(kcp: LocalCluster): Promise<RuntimeBootstrapper[]> {
  const list = await kubeRequest<{ items: RuntimeBootstrapper[] }>(kcp.kubeConfig(), {
    method: 'GET',
    path: RB_PATH,
  });
  return list.items;
}

/**
 * Waits until there are `count` RuntimeBootstrappers, all Ready with one applied version other
 * than `not`; resolves that version.
 */
export function allBootstrappersReady(
  kcp: LocalCluster,
  count: number,
  not?: string,
  timeoutMs = 90_000,
): Promise<string> {
  let seen = 'none listed yet';
  return eventually(
    async () => {
      const rbs = await listRuntimeBootstrappers(kcp);
      const versions = new Set(
        rbs.map((rb) => (rb.status?.state === 'Ready' ? rb.status.appliedVersion : '-')),
      );
      const [only] = versions;
      if (rbs.length === count && versions.size === 1 && only !== '-' && only !== not) return only;
      // Said on a timeout: which runtimes were where.
      seen = rbs
        .map(
          (rb) => `${rb.metadata.name} ${rb.status?.state ?? 'no status'} ${rb.status?.appliedVersion ?? ''}`,
        )
        .join('; ');
      return undefined;
    },
    timeoutMs,
    `all ${count} runtimes Ready${not === undefined ? '' : ` with a version other than ${not}`}`,
  ).catch((error: unknown) => {
    throw new ControlPlaneError(
      `${error instanceof Error ? error.message : String(error)} (last seen: ${seen})`,
      {
        cause: error,
      },
    );
  });
}
