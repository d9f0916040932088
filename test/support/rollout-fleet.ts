/**
 * A KCP and runtimes under a RolloutPolicy, for the rollout's integration tests: real API servers,
 * the real webhook on each runtime reporting what it serves, direct mode in this process.
 */
import { after, before } from 'node:test';
import type { Registry } from 'prom-client';
import {
  newRolloutPolicy,
  rolloutPolicyPath,
  type RolloutPolicyResource,
  type RolloutPolicySpec,
} from '../../src/api/rollout-policy.js';
import { rolloutDecisionCrd, rolloutPolicyCrd } from '../../src/api/rollout-policy-crd.js';
import { newRuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import type { SourceWatcher } from '../../src/controller/sources/source-watcher.js';
import type { ControlPlane } from '../../src/envtest/control-plane.js';
import { applyObjects } from '../../src/kube/apply.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import type { EventRecorder } from '../../src/kube/event-recorder.js';
import { createLogger, silentLogger } from '../../src/telemetry/logger.js';
import { eventually } from '../../src/envtest/eventually.js';
import { DirectFleet } from './direct-fleet.js';
import { runStatus } from '../../src/cli/commands/status-action.js';
import { RUNTIME_AGENT_LEASE } from '../../src/runtime-agent/runtime-agent.js';
import type { FleetStatus } from '../../src/controller/rollout/fleet-status.js';
import { seedConfigText } from './fixtures.js';
import {
  RB_PATH,
  asWebhookServiceAccount,
  markDeploymentAvailable,
  putKcpConfig,
  putPullSecret,
} from './kcp.js';
import { startTestWebhook, type TestWebhook } from './webhook.js';

/** One sample of the fleet: the set version each RuntimeBootstrapper has applied and is served. */
export type Sample = Record<string, { applied?: string; served?: string }>;

/** The seed config with `change` applied. */
export function config(change: (c: { availableFeatures: string[]; landscape?: string }) => void): string {
  const c = JSON.parse(seedConfigText()) as { availableFeatures: string[]; landscape?: string };
  change(c);
  return JSON.stringify(c);
}

/** The KCP (cluster `kcp`) and runtimes of a control plane; `rt-1` is labelled `canary: 'true'`. */
export class RolloutFleet {
  readonly webhooks = new Map<string, TestWebhook>();
  /** Where the controller records its Events (none when undefined); set before `start`. */
  events: EventRecorder | undefined;
  private readonly fleet: DirectFleet;

  constructor(private readonly plane: () => ControlPlane) {
    this.fleet = new DirectFleet(
      this.kcp,
      process.env.RTB_TEST_LOG ? createLogger({ level: process.env.RTB_TEST_LOG }) : silentLogger(),
    );
  }

  kcp = () => this.plane().cluster('kcp');
  rt = (id: string) => this.plane().cluster(id);

  get sources(): SourceWatcher {
    return this.fleet.sources;
  }

  /** The registry of the running controller. */
  get registry(): Registry {
    return this.fleet.registry;
  }

  /** The KCP with the CRDs, the sources, a kubeconfig Secret per runtime, and the policy `spec`. */
  async setUp(runtimes: readonly string[], spec: RolloutPolicySpec): Promise<void> {
    await this.fleet.prepare(Object.fromEntries(runtimes.map((id) => [id, this.rt(id)])));
    await ensureCrds(this.kcp().kubeConfig(), [rolloutPolicyCrd(), rolloutDecisionCrd()]);
    await this.createPolicy(spec);
  }

  /**
   * The fleet of the enclosing suite: before its tests, the KCP set up with `runtimes` and the
   * policy `spec`, then `start` (by default direct mode started with every runtime installed and
   * the rollout Complete); after them, everything stopped.
   */
  useFleet(
    runtimes: readonly string[],
    spec: RolloutPolicySpec,
    start: () => Promise<void> = () => this.startInstalled(runtimes),
  ): void {
    before(async () => {
      await this.setUp(runtimes, spec);
      await start();
    });
    after(() => this.stopAll());
  }

  async createPolicy(spec: RolloutPolicySpec): Promise<void> {
    await kubeRequest(this.kcp().kubeConfig(), {
      method: 'POST',
      path: rolloutPolicyPath(),
      body: newRolloutPolicy(spec),
    });
  }

  /** (Re)starts direct mode with webhook release `releaseVersion`. */
  async start(releaseVersion = '1.0.0'): Promise<void> {
    await this.fleet.restart({
      release: { image: `example.com/rt-bootstrapper:${releaseVersion}`, version: releaseVersion },
      runtimeTimeoutMs: 3_000,
      // Reports read every second while watched: a preflight's discovery is three reads (3 s, not 30).
      workloadWatchMs: 1_000,
      rollout: { policyName: 'default', autoRollback: true },
      ...(this.events ? { events: this.events } : {}),
    });
  }

  async stopAll(): Promise<void> {
    for (const w of this.webhooks.values()) await w.stop();
    await this.fleet.stop();
  }

  readRb = (id: string) => this.fleet.readRb(id);

  readPolicy = () =>
    kubeRequest<RolloutPolicyResource>(this.kcp().kubeConfig(), {
      method: 'GET',
      path: rolloutPolicyPath('default'),
    });

  /** Sets the policy's spec fields given, and annotations (merge patch). */
  async patchPolicy(spec: Partial<RolloutPolicySpec>, annotations?: Record<string, string>): Promise<void> {
    await kubeRequest(this.kcp().kubeConfig(), {
      method: 'PATCH',
      path: rolloutPolicyPath('default'),
      body: { spec, ...(annotations ? { metadata: { annotations } } : {}) },
    });
  }

  /** Replaces the KCP's pull Secret with one whose auth is `auth`. */
  putPullSecret = (auth: string): Promise<void> => putPullSecret(this.kcp(), auth);
  /** Replaces the KCP's webhook ConfigMap with `configText`. */
  putConfig = (configText: string): Promise<void> => putKcpConfig(this.kcp(), configText);

  /** Waits for a new source-set version on the KCP and returns it. */
  nextVersion(previous: string): Promise<string> {
    return this.fleet.nextVersion(previous);
  }

  /** Replaces the KCP's pull Secret (auth `auth`) and returns the set version that makes after `previous`. */
  async newPullSecretSet(auth: string, previous: string): Promise<string> {
    await this.putPullSecret(auth);
    return this.nextVersion(previous);
  }

  /** Waits until runtime `id` has set `version` applied and its webhook serves it. */
  async waitServed(id: string, version: string, timeoutMs = 40_000): Promise<void> {
    await eventually(
      async () => {
        const s = (await this.readRb(id)).status;
        return s?.state === 'Ready' && s.appliedVersion === version && s.servedVersion === version
          ? true
          : undefined;
      },
      timeoutMs,
      `${id} to serve ${version}`,
    );
  }

  async waitPhase(phase: string, timeoutMs = 60_000): Promise<RolloutPolicyResource> {
    return eventually(
      async () => {
        const p = await this.readPolicy();
        return p.status?.phase === phase ? p : undefined;
      },
      timeoutMs,
      `the rollout to be ${phase}`,
    );
  }

  /** Samples the fleet until stopped, so a test can check an order that never may be broken. */
  trace(ids: readonly string[]): { stop(): Promise<Sample[]> } {
    return sampleUntilStopped(async () => {
      const sample: Sample = {};
      for (const id of ids) {
        const s = (await this.readRb(id)).status;
        sample[id] = {
          ...(s?.appliedVersion !== undefined ? { applied: s.appliedVersion } : {}),
          ...(s?.servedVersion !== undefined ? { served: s.servedVersion } : {}),
        };
      }
      return sample;
    }, 100);
  }

  /** Samples the policy's phase until stopped (a halt between two reads would be missed by one read). */
  tracePhases(): { stop(): Promise<string[]> } {
    return sampleUntilStopped(async () => (await this.readPolicy()).status?.phase ?? '', 200);
  }

  /** What `rtb status` prints of the fleet, as text. */
  statusText(): Promise<string> {
    return runStatus(
      { namespace: 'kcp-system', rolloutPolicy: 'default', output: 'text' },
      this.kcp().kubeConfig(),
    );
  }

  /** What `rtb status -o json` prints of the fleet. */
  async statusJson(): Promise<FleetStatus> {
    const json = await runStatus(
      { namespace: 'kcp-system', rolloutPolicy: 'default', output: 'json' },
      this.kcp().kubeConfig(),
    );
    return JSON.parse(json) as FleetStatus;
  }

  /** Starts direct mode, installs `runtimes`, and waits until each serves the set and the rollout is Complete. */
  async startInstalled(runtimes: readonly string[]): Promise<void> {
    await this.start();
    for (const id of runtimes) await this.install(id);
    for (const id of runtimes) await this.waitServed(id, this.sources.snapshot().version);
    await this.waitPhase('Complete');
  }

  /** Installs `id`: its RuntimeBootstrapper, the Deployment made available, its webhook started. */
  async install(id: string): Promise<void> {
    const labels: Record<string, string> = id === 'rt-1' ? { canary: 'true' } : {};
    await kubeRequest(this.kcp().kubeConfig(), {
      method: 'POST',
      path: RB_PATH,
      body: newRuntimeBootstrapper(id, 'kcp-system', { labels }),
    });
    await this.fleet.waitState(id, 'Installing');
    await markDeploymentAvailable(this.rt(id));
    await this.fleet.waitState(id, 'Ready');
    // The tests play the runtime agent (workload reports, preflight findings): its Lease, held by
    // them as an earlier release's replica would hold it, keeps the webhook's own agent idle.
    await applyObjects(
      this.rt(id).kubeConfig(),
      [
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: RUNTIME_AGENT_LEASE, namespace: 'kyma-system' },
          spec: {
            holderIdentity: 'a test playing the runtime agent',
            leaseDurationSeconds: 3600,
            // A MicroTime: six digits of the second's fraction.
            renewTime: new Date().toISOString().replace('Z', '000Z'),
          },
        } as never,
      ],
      { fieldManager: 'rollout-fleet' },
    );
    // The real webhook with its ServiceAccount's rights, reporting what it serves.
    const hook = await startTestWebhook(this.rt(id), {
      kubeConfig: await asWebhookServiceAccount(this.rt(id)),
      statusConfigMap: { namespace: 'kyma-system', name: WEBHOOK_STATUS_CONFIG_MAP },
    });
    this.webhooks.set(id, hook);
  }

  /**
   * Writes keys of runtime `id`'s webhook status ConfigMap (`kyma-system`) under `fieldManager`, as
   * someone other than its webhook: a test playing the webhook, or the runtime's admin forging it.
   */
  async writeStatusKeys(id: string, data: Record<string, string>, fieldManager: string): Promise<void> {
    await applyObjects(
      this.rt(id).kubeConfig(),
      [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: WEBHOOK_STATUS_CONFIG_MAP, namespace: 'kyma-system' },
          data,
        } as never,
      ],
      { fieldManager },
    );
  }

  /** The sum of a metric's values in the running controller's registry. */
  metric = (name: string): Promise<number> => this.fleet.metric(name);
}

/** Takes a sample every `everyMs` until stopped; resolves the samples. */
function sampleUntilStopped<T>(take: () => Promise<T>, everyMs: number): { stop(): Promise<T[]> } {
  const samples: T[] = [];
  const run = { on: true };
  const loop = (async () => {
    while (run.on) {
      samples.push(await take());
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      run.on = false;
      await loop;
      return samples;
    },
  };
}
