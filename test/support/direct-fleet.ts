/**
 * Direct mode on a KCP with runtimes, for integration tests: the KCP readied (CRD, sources, a
 * kubeconfig Secret per runtime), its source watcher, direct mode in this process (with the drift
 * listener on request), the RuntimeBootstrappers created, read and waited for; what a test starts
 * beside it is stopped first, then direct mode, then the sources.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { Registry } from 'prom-client';
import type { Condition, RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { RUNTIME_NAMESPACE, WATCHER_TLS_SECRET } from '../../src/api/runtime-names.js';
import { startDirectMode } from '../../src/controller/direct/direct-mode.js';
import type { DirectMode, DirectModeOptions } from '../../src/controller/direct/direct-mode-options.js';
import type { SourceWatcher } from '../../src/controller/sources/source-watcher.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { freePort } from '../../src/envtest/free-port.js';
import { applyObjects } from '../../src/kube/apply.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { silentLogger, type Logger } from '../../src/telemetry/logger.js';
import {
  RB_PATH,
  coreOf,
  createRuntimeBootstrapper,
  directModeOptions,
  markDeploymentAvailable,
  prepareKcp,
  putAdminKubeconfigSecret,
  startKcpSources,
} from './kcp.js';
import { driftListenerOptions, type DriftListenerRequest } from './drift-listener-options.js';
import type { TestWebhook } from './webhook.js';

/** Direct mode's settings beyond the tests' defaults ({@link directModeOptions}), and its drift listener. */
export type DirectFleetStart = Partial<DirectModeOptions> & {
  /** Serve the drift listener on a free loopback port and tell runtimes its URL (true: as it is). */
  readonly withDriftListener?: true | DriftListenerRequest;
};

/** Files of a runtime's drift client certificate, as the webhook's drift options name them. */
export interface DriftClientFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

/**
 * Copies the drift client certificate the KCP gave `runtime` (its watcher Secret) into `dir`, as a
 * kubelet mounts a Secret volume; call it again to follow a renewal.
 */
export async function writeDriftClientFiles(runtime: LocalCluster, dir: string): Promise<DriftClientFiles> {
  const s = await coreOf(runtime).readNamespacedSecret({
    name: WATCHER_TLS_SECRET,
    namespace: RUNTIME_NAMESPACE,
  });
  await mkdir(dir, { recursive: true });
  for (const key of ['tls.crt', 'tls.key', 'ca.crt'])
    await writeFile(join(dir, key), Buffer.from(s.data?.[key] ?? '', 'base64'));
  return { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), caFile: join(dir, 'ca.crt') };
}

/**
 * Registers `hook` (a webhook in this process) as `runtime`'s drift webhook under `name`: the
 * registration direct mode installs points at the in-cluster Service, which no Pod serves here.
 */
export async function registerDriftWebhookHere(
  runtime: LocalCluster,
  hook: TestWebhook,
  name: string,
): Promise<void> {
  const vwc = renderWebhookManifests({
    image: 'x',
    url: hook.url,
    caBundlePem: hook.ca.certPem,
    driftListenerUrl: 'https://unused',
  }).validatingWebhookConfiguration;
  if (!vwc) throw new Error('no drift registration rendered');
  await applyObjects(runtime.kubeConfig(), [{ ...vwc, metadata: { ...vwc.metadata, name } }]);
}

/** The condition of `type` on a RuntimeBootstrapper. */
export const conditionOf = (rb: RuntimeBootstrapper, type: string): Condition | undefined =>
  rb.status?.conditions?.find((c) => c.type === type);

/**
 * One test file's direct mode on the KCP `kcp`: `prepare` readies the KCP and starts the sources,
 * `start` runs direct mode (again after `stopDirect`, or at once by `restart`), `stop` ends all in
 * reverse. Getters throw before the part they return is started.
 */
export class DirectFleet {
  /** The registry of direct mode's latest start (a fresh one each start unless one is given). */
  registry = new Registry();
  /** The drift listener's port, once started with one; 0 otherwise. */
  driftPort = 0;
  private watcher: SourceWatcher | undefined;
  private running: DirectMode | undefined;
  private readonly stops: (() => unknown)[] = [];

  constructor(
    readonly kcp: () => LocalCluster,
    readonly logger: Logger = silentLogger(),
  ) {}

  get sources(): SourceWatcher {
    if (!this.watcher) throw new Error('the sources are not started (prepare first)');
    return this.watcher;
  }

  get direct(): DirectMode {
    if (!this.running) throw new Error('direct mode is not running');
    return this.running;
  }

  /** Whether direct mode runs. */
  get started(): boolean {
    return this.running !== undefined;
  }

  /** The drift listener's URL, once started with one. */
  get driftUrl(): string {
    return `https://127.0.0.1:${this.driftPort}`;
  }

  /**
   * The KCP readied for direct mode (CRD, sources), a system:masters kubeconfig Secret per runtime
   * named, and the source watcher started.
   */
  async prepare(runtimes: Readonly<Record<string, LocalCluster>> = {}): Promise<void> {
    await prepareKcp(this.kcp());
    for (const [id, cluster] of Object.entries(runtimes))
      await putAdminKubeconfigSecret(this.kcp(), cluster, id);
    this.watcher = await startKcpSources(this.kcp(), this.logger);
  }

  /** Starts direct mode with the tests' defaults and `options`; the drift listener keeps its port across starts. */
  async start(options: DirectFleetStart = {}): Promise<DirectMode> {
    const { withDriftListener, ...more } = options;
    this.registry = more.registry ?? new Registry();
    let drift: Partial<DirectModeOptions> = {};
    if (withDriftListener !== undefined) {
      if (this.driftPort === 0) this.driftPort = await freePort();
      drift = driftListenerOptions(this.driftPort, withDriftListener === true ? {} : withDriftListener);
    }
    this.running = await startDirectMode(
      directModeOptions(this.kcp(), this.sources, this.logger, {
        ...drift,
        ...more,
        registry: this.registry,
      }),
    );
    return this.running;
  }

  /**
   * Direct mode for the enclosing suite: before its tests, the KCP prepared for `runtimes` (read
   * then: the clusters exist once the control plane runs) and direct mode started with `options`;
   * after them, everything stopped.
   */
  use(runtimes: () => Readonly<Record<string, LocalCluster>>, options: DirectFleetStart = {}): void {
    before(async () => {
      await this.prepare(runtimes());
      await this.start(options);
    });
    after(() => this.stop());
  }

  /** Stops direct mode (if it runs), leaving the sources and the runtimes. */
  async stopDirect(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    await running?.stop();
  }

  /** Stops direct mode and starts it again with `options`. */
  async restart(options: DirectFleetStart = {}): Promise<DirectMode> {
    await this.stopDirect();
    return this.start(options);
  }

  /** Something a test started beside direct mode (a webhook, a timer): stopped first, last added first. */
  onStop(stop: () => unknown): void {
    this.stops.push(stop);
  }

  /** Stops what tests added (in reverse), then direct mode, then the sources. */
  async stop(): Promise<void> {
    for (const stop of this.stops.splice(0).reverse()) await stop();
    await this.stopDirect();
    const watcher = this.watcher;
    this.watcher = undefined;
    await watcher?.stop();
  }

  /** Creates the RuntimeBootstrapper of runtime `id` (named after it, annotations optional). */
  create(id: string, annotations?: Record<string, string>): Promise<void> {
    return createRuntimeBootstrapper(this.kcp(), id, annotations);
  }

  /** Waits for a source-set version other than `previous` on the KCP; resolves it. */
  nextVersion(previous: string): Promise<string> {
    return eventually(() =>
      this.sources.snapshot().version !== previous ? this.sources.snapshot().version : undefined,
    );
  }

  /** The RuntimeBootstrapper named `name` as stored. */
  readRb = (name: string): Promise<RuntimeBootstrapper> =>
    kubeRequest<RuntimeBootstrapper>(this.kcp().kubeConfig(), { method: 'GET', path: `${RB_PATH}/${name}` });

  /** Waits until RuntimeBootstrapper `name` is in `state`; resolves it. */
  waitState(name: string, state: string, timeoutMs = 30_000): Promise<RuntimeBootstrapper> {
    return this.waitFor(name, (rb) => rb.status?.state === state, timeoutMs, `${name} to be ${state}`);
  }

  /** Waits until RuntimeBootstrapper `name` satisfies `holds`; resolves it. */
  waitFor(
    name: string,
    holds: (rb: RuntimeBootstrapper) => boolean,
    timeoutMs = 30_000,
    what = `${name} as awaited`,
  ): Promise<RuntimeBootstrapper> {
    return eventually(
      async () => {
        const rb = await this.readRb(name);
        return holds(rb) ? rb : undefined;
      },
      timeoutMs,
      what,
    );
  }

  /** Waits until RuntimeBootstrapper `name` has condition `type` with the status and reason given; resolves it. */
  waitCondition(
    name: string,
    type: string,
    expected: { readonly status?: string; readonly reason?: string },
    timeoutMs = 30_000,
  ): Promise<RuntimeBootstrapper> {
    const { status, reason } = expected;
    return this.waitFor(
      name,
      (rb) => {
        const c = conditionOf(rb, type);
        return c !== undefined && (status ?? c.status) === c.status && (reason ?? c.reason) === c.reason;
      },
      timeoutMs,
      `${name}: ${type} ${[status, reason].filter((x) => x !== undefined).join(' ')}`,
    );
  }

  /**
   * Waits until RuntimeBootstrapper `name` is Ready, reporting the webhook Deployment of `runtime`
   * available whenever it is Installing (no kubelet runs it); resolves it.
   */
  waitReady(name: string, runtime: LocalCluster, timeoutMs = 30_000): Promise<RuntimeBootstrapper> {
    return eventually(
      async () => {
        const rb = await this.readRb(name);
        if (rb.status?.state === 'Installing') await markDeploymentAvailable(runtime).catch(() => undefined);
        return rb.status?.state === 'Ready' ? rb : undefined;
      },
      timeoutMs,
      `${name} Ready`,
    );
  }

  /** The sum of a metric's values in direct mode's registry (labels as given must match). */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    const values = (await this.registry.getSingleMetric(name)?.get())?.values ?? [];
    return values
      .filter((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x))
      .reduce((sum, v) => sum + v.value, 0);
  }
}
