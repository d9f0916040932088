/**
 * Shared set-up of the controller's integration tests: a KCP on a real API server (Runtime
 * CRD, kcp-system, the three sources, Runtimes) and a controller started in this process. The
 * stand-in for KIM that consumes the signal is in fake-kim.ts.
 */
import { startAnnotateMode } from '../../src/controller/annotate/annotate-mode.js';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { Writable } from 'node:stream';
import { runtimeCrd } from '../../src/api/crds.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { RUNTIME_GROUP, RUNTIME_PLURAL, RUNTIME_VERSION, type Runtime } from '../../src/api/runtime.js';
import { CONFIG_MAP_KEY } from '../../src/api/webhook-features.js';
import {
  startControllerApp,
  type ControllerApp,
  type ControllerAppOptions,
} from '../../src/controller/controller-app.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from '../support/fixtures.js';
import { runtimeObject } from '../support/runtime-object.js';
import { putTrustBundle } from '../support/trust-bundles.js';

export const NS = 'kcp-system';
export const PULL_SECRET = 'rtb-pull-secret';
export const CTB = 'rtb-kcp.test:ctb:1';
export const CONFIG_MAP = 'rt-bootstrapper-config';

/** A dockerconfigjson Secret's data for `auth` (the test's "password"). */
export const dockerConfig = (auth: string): Record<string, string> => ({
  '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { 'registry.example.com': { auth } } })).toString(
    'base64',
  ),
});

/** API clients of one cluster. */
export interface Kcp {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
}

export function kcpClients(kc: KubeConfig): Kcp {
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
  };
}

/** The Runtime CRD, kcp-system and the three sources (valid). */
export async function setUpKcp(cluster: LocalCluster, trustBundlePem: string): Promise<Kcp> {
  const kcp = kcpClients(cluster.kubeConfig());
  await ensureCrds(kcp.kc, [runtimeCrd()]);
  await kcp.core.createNamespace({ body: { metadata: { name: NS } } });
  await kcp.core.createNamespacedSecret({
    namespace: NS,
    body: {
      metadata: { name: PULL_SECRET },
      type: 'kubernetes.io/dockerconfigjson',
      data: dockerConfig('v1'),
    },
  });
  await putTrustBundle(kcp.kc, CTB, { signerName: 'rtb-kcp.test/ctb', trustBundle: trustBundlePem });
  await kcp.core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: CONFIG_MAP }, data: { [CONFIG_MAP_KEY]: seedConfigText() } },
  });
  await eventually(
    async () => (await kcp.custom.listNamespacedCustomObject({ ...runtimeApi, namespace: NS })) as unknown,
    30_000,
    'the Runtime CRD to be served',
  );
  return kcp;
}

const runtimeApi = { group: RUNTIME_GROUP, version: RUNTIME_VERSION, plural: RUNTIME_PLURAL } as const;

export async function createRuntime(
  kcp: Kcp,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  await kcp.custom.createNamespacedCustomObject({
    ...runtimeApi,
    namespace: NS,
    body: runtimeObject(name, labels),
  });
}

export async function readRuntime(kcp: Kcp, name: string): Promise<Runtime> {
  return (await kcp.custom.getNamespacedCustomObject({ ...runtimeApi, namespace: NS, name })) as Runtime;
}

export async function patchRuntime(kcp: Kcp, name: string, patch: object): Promise<void> {
  await kcp.custom.patchNamespacedCustomObject(
    { ...runtimeApi, namespace: NS, name, body: patch },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Replace the pull Secret's content (or only its labels). */
export async function setPullSecret(
  kcp: Kcp,
  auth: string,
  labels?: Record<string, string>,
): Promise<string> {
  const current = await kcp.core.readNamespacedSecret({ name: PULL_SECRET, namespace: NS });
  const updated = await kcp.core.replaceNamespacedSecret({
    name: PULL_SECRET,
    namespace: NS,
    body: {
      ...current,
      metadata: { ...current.metadata, ...(labels ? { labels } : {}) },
      data: dockerConfig(auth),
    },
  });
  return updated.metadata?.resourceVersion ?? '';
}

/** Replace the webhook ConfigMap's config text. */
export async function setConfigText(kcp: Kcp, text: string): Promise<V1ConfigMap> {
  const current = await kcp.core.readNamespacedConfigMap({ name: CONFIG_MAP, namespace: NS });
  return kcp.core.replaceNamespacedConfigMap({
    name: CONFIG_MAP,
    namespace: NS,
    body: { ...current, data: { [CONFIG_MAP_KEY]: text } },
  });
}

/** The seed config with one override changed, so the content differs. */
export const configVariant = (registry: string): string => {
  const cfg = JSON.parse(seedConfigText()) as { overrides: Record<string, string> };
  cfg.overrides = { ...cfg.overrides, 'replace.me': registry };
  return JSON.stringify(cfg);
};

export async function setTrustBundle(kcp: Kcp, pem: string): Promise<void> {
  await putTrustBundle(kcp.kc, CTB, { trustBundle: pem });
}

/** Collects JSON log lines in memory (to check what the controller says, and what it never says). */
export class LogSink {
  readonly lines: string[] = [];
  readonly stream = new Writable({
    write: (chunk: Buffer, _enc, done) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') this.lines.push(line);
      done();
    },
  });
  text(): string {
    return this.lines.join('\n');
  }
}

/** The value of one series of a metric of `app`. */
export async function metricValue(
  app: ControllerApp,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = app.registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  let sum = 0;
  for (const v of values) {
    if (Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want)) sum += v.value;
  }
  return sum;
}

/** Starts a controller in this process (annotate mode, fast coalescing) and waits until it is ready. */
export async function startTestController(
  kc: KubeConfig,
  overrides: Partial<ControllerAppOptions> & { logs?: LogSink } = {},
): Promise<ControllerApp> {
  const { logs, ...rest } = overrides;
  const app = await startControllerApp({
    kubeConfig: kc,
    namespace: NS,
    pullSecretName: PULL_SECRET,
    clusterTrustBundleName: CTB,
    configMapName: CONFIG_MAP,
    mode: 'annotate',
    starter: startAnnotateMode,
    modeOptions: {
      signal: 'annotation',
      coalesceMs: 1_000,
      concurrency: 8,
      resyncMs: 60_000,
      stateConfigMapName: 'rt-bootstrapper-controller-state',
    },
    leaderElection: false,
    host: '127.0.0.1',
    port: 0,
    logger: createLogger({ level: 'debug', name: 'controller', destination: (logs ?? new LogSink()).stream }),
    ...rest,
  });
  await eventually(() => (app.ready() ? true : undefined), 30_000, 'the controller to be ready');
  return app;
}
