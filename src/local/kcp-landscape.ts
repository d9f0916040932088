import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import {
  type RuntimeBootstrapper,
  runtimeBootstrappersPath,
  newRuntimeBootstrapper,
} from '../api/runtime-bootstrapper.js';
import { runtimeBootstrapperCrd } from '../api/runtime-bootstrapper-crd.js';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../api/runtime-names.js';
import { CONTENT_VERSION_ANNOTATION, runtimeSetVersion } from '../api/set-version.js';
import { parseWebhookConfig } from '../api/webhook-config.js';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE } from '../api/webhook-features.js';
import { startDirectMode } from '../controller/direct/direct-mode.js';
import type { DirectMode } from '../controller/direct/direct-mode-options.js';
import { createSourceWatcher } from '../controller/sources/source-set.js';
import type { SourceWatcher } from '../controller/sources/source-watcher.js';
import type { LocalCluster } from '../envtest/control-plane.js';
import { applyObjects } from '../kube/apply.js';
import { ensureCrds } from '../kube/crd.js';
import { kubeRequest } from '../kube/kube-request.js';
import { packageVersion, releaseImage } from '../version.js';
import { landscapeSourceObjects, trustBundleApiVersionOf } from './landscape-sources.js';
import { markDeploymentAvailable } from './simulated-kubelet.js';

/** The KCP side of the local landscape: sources, controller in direct mode, one CR per runtime. */
export interface KcpLandscape {
  readonly direct: DirectMode;
  readonly sources: SourceWatcher;
  readBootstrapper(runtimeId: string): Promise<RuntimeBootstrapper>;
  stop(): Promise<void>;
}

const RB_PATH = runtimeBootstrappersPath('kcp-system');

/**
 * The RuntimeBootstrapper CRD, the namespace and one CR per runtime on the KCP. Apart from the controller, so it
 * can run while the rest starts: the API server's first create of a new resource waits about 2 s
 * (its quota evaluator for the resource), and direct mode takes the CRs up whenever it starts.
 */
export async function createRuntimeBootstrappers(kcp: LocalCluster, ids: readonly string[]): Promise<void> {
  const kc = kcp.kubeConfig();
  await ensureCrds(kc, [runtimeBootstrapperCrd()]);
  await applyObjects(kc, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kcp-system' } }]);
  for (const id of ids)
    await kubeRequest(kc, { method: 'POST', path: RB_PATH, body: newRuntimeBootstrapper(id, 'kcp-system') });
}

/**
 * Sets up the KCP as KIM would leave it (namespace, the three sources, one kubeconfig Secret
 * per runtime) and starts the controller in direct mode in this process (the CRD and the CRs:
 * {@link createRuntimeBootstrappers}).
 */
export async function startKcpLandscape(o: {
  kcp: LocalCluster;
  runtimes: readonly LocalCluster[];
  configText: string;
  /** The pull Secret's `.dockerconfigjson` (default: placeholder credentials). */
  dockerConfigJson?: string | undefined;
  /** The webhook image direct mode installs (default: the release's). */
  releaseImage?: string | undefined;
  /** Where the webhooks' preflight reaches the landscape's registries. */
  registryServers?: Readonly<Record<string, string>> | undefined;
  /** Report the webhook Deployments available, as no kubelet runs them (clusters without a node). */
  simulateKubelet: boolean;
  logger: Logger;
}): Promise<KcpLandscape> {
  const kc = o.kcp.kubeConfig();
  await applyObjects(
    kc,
    await landscapeSourceObjects({
      configText: o.configText,
      namespace: 'kcp-system',
      trustBundleApiVersion: await trustBundleApiVersionOf(kc),
      pullSecretName: 'registry-credentials',
      dockerConfigJson: o.dockerConfigJson,
    }),
  );
  for (const rt of o.runtimes) {
    await applyObjects(kc, [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: `kubeconfig-${rt.name}`,
          namespace: 'kcp-system',
          labels: { 'kyma-project.io/runtime-id': rt.name, 'operator.kyma-project.io/kyma-name': rt.name },
        },
        data: { config: Buffer.from(rt.kubeconfig).toString('base64') },
      } as KubernetesObject,
    ]);
  }
  const config = JSON.parse(o.configText) as { clusterTrustBundle?: { name?: string } };
  const sources = createSourceWatcher({
    kubeConfig: kc,
    namespace: 'kcp-system',
    pullSecretName: 'registry-credentials',
    clusterTrustBundleName: config.clusterTrustBundle?.name || undefined,
    configMapName: 'rt-bootstrapper-config',
    logger: o.logger,
  });
  await sources.start();
  const direct = await startDirectMode({
    kubeConfig: kc,
    namespace: 'kcp-system',
    sources,
    logger: o.logger,
    registry: new Registry(),
    release: {
      image: o.releaseImage ?? releaseImage(),
      version: packageVersion(),
      registryServers: o.registryServers,
    },
    coalesceMs: 100,
  });
  // Without a node: report the webhook Deployments available once they exist (and after every
  // new generation), as the deployment controller would.
  const kubelet = o.simulateKubelet
    ? setInterval(() => {
        for (const rt of o.runtimes) {
          if (rt.running)
            void markDeploymentAvailable(rt.kubeConfig(), RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT).catch(
              () => false,
            );
        }
      }, 500)
    : undefined;
  kubelet?.unref();
  return {
    direct,
    sources,
    readBootstrapper: (id) =>
      kubeRequest<RuntimeBootstrapper>(kc, { method: 'GET', path: `${RB_PATH}/${id}` }),
    async stop() {
      clearInterval(kubelet);
      await direct.stop();
      await sources.stop();
    },
  };
}

/** Waits until every runtime's CR is Ready. */
export async function waitReady(k: KcpLandscape, ids: readonly string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const id of ids) {
    for (;;) {
      const rb = await k.readBootstrapper(id);
      if (rb.status?.state === 'Ready') break;
      if (Date.now() > deadline) {
        const why = rb.status?.conditions?.find((c) => c.status !== 'True');
        throw new Error(`${id} is not Ready (${rb.status?.state ?? 'no status'}: ${why?.message ?? ''})`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * The set a runtime holds, computed from its objects as its webhook computes it
 * (../api/set-version.ts): the config ConfigMap, the pull Secret and the trust bundle the config
 * names. Undefined while the ConfigMap is not there or names nothing readable.
 */
export async function heldSetVersion(rt: LocalCluster): Promise<string | undefined> {
  const access = rt.kubeConfig();
  const core = access.makeApiClient(CoreV1Api);
  const annotations = (o: KubernetesObject | undefined): Record<string, string> | undefined =>
    o?.metadata?.annotations;
  try {
    const cm = await core.readNamespacedConfigMap({ name: CONFIG_MAP_NAME, namespace: CONFIG_MAP_NAMESPACE });
    const text = cm.data?.[CONFIG_MAP_KEY];
    if (text === undefined) return undefined;
    const config = parseWebhookConfig(text);
    const secret = await core
      .readNamespacedSecret({
        name: config.imagePullSecret.name,
        namespace: config.imagePullSecret.namespace,
      })
      .catch(() => undefined);
    const bundleName = config.clusterTrustBundle?.name;
    const bundle =
      bundleName === undefined
        ? undefined
        : await kubeRequest<KubernetesObject>(access, {
            method: 'GET',
            path: `/apis/${await trustBundleApiVersionOf(access)}/clustertrustbundles/${encodeURIComponent(bundleName)}`,
          }).catch(() => undefined);
    return runtimeSetVersion({
      configMap: annotations(cm),
      pullSecret: annotations(secret)?.[CONTENT_VERSION_ANNOTATION],
      trustBundle: annotations(bundle)?.[CONTENT_VERSION_ANNOTATION],
    });
  } catch {
    return undefined;
  }
}
