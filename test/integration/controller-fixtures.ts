/**
 * Shared set-up of the controller's integration tests: a KCP on a real API server (Runtime
 * CRD, kcp-system, the three sources, Runtimes), a stand-in for KIM that consumes the signal
 * the way KIM does (and counts what it consumed), and a controller started in this process.
 */
import {
  ApiextensionsV1Api,
  CertificatesV1beta1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { Writable } from 'node:stream';
import { runtimeCrd } from '../../src/api/crds.js';
import {
  FORCE_PATCH_RECONCILIATION,
  RUNTIME_API_VERSION,
  RUNTIME_GROUP,
  RUNTIME_KIND,
  RUNTIME_PLURAL,
  RUNTIME_VERSION,
  type Runtime,
} from '../../src/api/runtime.js';
import { CONFIG_MAP_KEY } from '../../src/api/webhook-config.js';
import { SIGNALLED_VERSION_ANNOTATION } from '../../src/controller/annotate/signal-decision.js';
import {
  startControllerApp,
  type ControllerApp,
  type ControllerAppOptions,
} from '../../src/controller/controller-app.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { KubeListWatch } from '../../src/kube/list-watch.js';
import { Reflector } from '../../src/kube/reflector.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { eventually } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';

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
  readonly certs: CertificatesV1beta1Api;
}

export function kcpClients(kc: KubeConfig): Kcp {
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    certs: kc.makeApiClient(CertificatesV1beta1Api),
  };
}

/** The Runtime CRD, kcp-system and the three sources (valid). */
export async function setUpKcp(cluster: LocalCluster, trustBundlePem: string): Promise<Kcp> {
  const kcp = kcpClients(cluster.kubeConfig());
  await kcp.kc.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({ body: runtimeCrd() });
  await kcp.core.createNamespace({ body: { metadata: { name: NS } } });
  await kcp.core.createNamespacedSecret({
    namespace: NS,
    body: {
      metadata: { name: PULL_SECRET },
      type: 'kubernetes.io/dockerconfigjson',
      data: dockerConfig('v1'),
    },
  });
  await kcp.certs.createClusterTrustBundle({
    body: { metadata: { name: CTB }, spec: { signerName: 'rtb-kcp.test/ctb', trustBundle: trustBundlePem } },
  });
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

/** A Runtime as KIM would create it (the fields its CRD requires). */
export function runtimeObject(name: string, labels: Record<string, string> = {}): Runtime {
  return {
    apiVersion: RUNTIME_API_VERSION,
    kind: RUNTIME_KIND,
    metadata: { name, namespace: NS, labels: { 'kyma-project.io/runtime-id': name, ...labels } },
    spec: {
      shoot: {
        name: `shoot-${name}`.slice(0, 20),
        purpose: 'production',
        platformRegion: 'cf-eu10',
        region: 'eu-central-1',
        secretBindingName: 'aws-binding',
        provider: {
          type: 'aws',
          workers: [{ name: 'cpu-worker-0', machine: { type: 'm6i.large' }, minimum: 1, maximum: 3 }],
        },
        networking: { pods: '100.64.0.0/12', nodes: '10.250.0.0/16', services: '100.104.0.0/13' },
      },
      security: {
        administrators: ['admin@example.com'],
        networking: { filter: { egress: { enabled: false } } },
      },
    },
  };
}

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
  const current = await kcp.certs.readClusterTrustBundle({ name: CTB });
  await kcp.certs.replaceClusterTrustBundle({
    name: CTB,
    body: { ...current, spec: { ...current.spec, trustBundle: pem } },
  });
}

/**
 * Plays KIM: every time a Runtime carries the signal it counts one consumption and removes the
 * signal, as KIM's RuntimeController does after its patch attempt.
 */
export class FakeKim {
  readonly consumed = new Map<string, number>();
  /** Every consumption in order, with the source-set version the controller stamped on the Runtime. */
  readonly signals: { readonly runtime: string; readonly version: string | undefined }[] = [];
  private readonly reflector: Reflector<Runtime>;
  private readonly carrying = new Set<string>();
  private readonly removals = new Set<Promise<void>>();

  constructor(
    private readonly kcp: Kcp,
    private readonly signal: 'annotation' | 'label' = 'annotation',
  ) {
    this.reflector = new Reflector<Runtime>({
      name: 'fake-kim',
      listerWatcher: new KubeListWatch<Runtime>(
        kcp.kc,
        `/apis/${RUNTIME_GROUP}/${RUNTIME_VERSION}/namespaces/${NS}/${RUNTIME_PLURAL}`,
      ),
    });
    const seen = (rt: Runtime): void => {
      const name = rt.metadata?.name ?? '';
      const map = this.signal === 'annotation' ? rt.metadata?.annotations : rt.metadata?.labels;
      const has = map?.[FORCE_PATCH_RECONCILIATION] === 'true';
      if (!has) {
        this.carrying.delete(name);
        return;
      }
      if (this.carrying.has(name)) return;
      this.carrying.add(name);
      this.consumed.set(name, (this.consumed.get(name) ?? 0) + 1);
      this.signals.push({ runtime: name, version: rt.metadata?.annotations?.[SIGNALLED_VERSION_ANNOTATION] });
      const field = this.signal === 'annotation' ? 'annotations' : 'labels';
      const p = patchRuntime(this.kcp, name, {
        metadata: { [field]: { [FORCE_PATCH_RECONCILIATION]: null } },
      })
        .catch(() => undefined)
        .finally(() => this.removals.delete(p));
      this.removals.add(p);
    };
    this.reflector.addEventHandler({
      onAdd: seen,
      onUpdate: (_o, n) => {
        seen(n);
      },
    });
  }

  async start(): Promise<void> {
    this.reflector.start();
    await this.reflector.waitForSync();
  }

  async stop(): Promise<void> {
    await this.reflector.stop();
    await Promise.all([...this.removals]);
  }

  /** Sum of consumptions. */
  total(): number {
    let n = 0;
    for (const v of this.consumed.values()) n += v;
    return n;
  }

  /** Per Runtime name, consumptions since `before` (a copy of `consumed` taken earlier). */
  since(before: ReadonlyMap<string, number>): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, v] of this.consumed) {
      const d = v - (before.get(k) ?? 0);
      if (d > 0) out.set(k, d);
    }
    return out;
  }

  /** Whether no Runtime carries the signal and no removal is in flight. */
  idle(): boolean {
    return this.carrying.size === 0 && this.removals.size === 0;
  }
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
