import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { readWebhookConfig } from '../../../../src/api/webhook-config.js';
import type { ClusterAccess } from '../../../../src/kube/cluster-access.js';
import { KubeApiError } from '../../../../src/kube/kube-errors.js';
import { LeaseLostError, type LeaseFence } from '../../../../src/kube/lease-fence.js';
import { Store } from '../../../../src/kube/store.js';
import { servedTrustBundleApi } from '../../../../src/kube/trust-bundle-api.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import {
  BootstrapperReconciler,
  STATUS_CONFLICT_REQUEUE_MS,
  UNMOUNT_REQUEUE_MS,
  type ReconcilerDeps,
} from '../../../../src/controller/direct/bootstrapper-reconciler.js';
import { createDirectMetrics, type DirectMetrics } from '../../../../src/controller/direct/direct-metrics.js';
import { RuntimeClientPool } from '../../../../src/controller/direct/runtime-clients.js';
import type { RuntimeOps } from '../../../../src/controller/direct/runtime-ops.js';
import { WORKLOAD_SLOW_LOOK_MS } from '../../../../src/controller/direct/webhook-report.js';
import { RuntimeUnreachableError } from '../../../../src/controller/direct/runtime-unreachable.js';
import {
  goTo,
  type Found,
  type Outcome,
  type StateContext,
  type Step,
} from '../../../../src/controller/direct/state-context.js';
import { resolveDirectModeSettings } from '../../../../src/controller/direct/direct-mode-options.js';
import type { SyncSetResult } from '../../../../src/controller/direct/sync-set.js';
import { seedConfigText } from '../../../support/fixtures.js';
import { keptTrustProjection } from '../../../support/trust-projection-condition.js';

const KEY = 'kcp-system/rb-a';

const bootstrapper = (status: RuntimeBootstrapper['status'] = {}, spec = {}): RuntimeBootstrapper => ({
  apiVersion: 'rt-bootstrapper.kyma-project.io/v1alpha1',
  kind: 'RuntimeBootstrapper',
  metadata: { name: 'rb-a', namespace: 'kcp-system', generation: 1, uid: 'u-1', resourceVersion: '1' },
  spec: { runtimeID: 'runtime-a', ...spec },
  status,
});

const SET: SyncSetResult = {
  ok: true,
  set: {
    version: 'v2',
    config: readWebhookConfig(JSON.parse(seedConfigText()) as unknown).config,
    objects: [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'registry-credentials', namespace: 'kyma-system' },
      },
    ],
  },
};

const refuse = (what: string): Promise<never> => Promise.reject(new Error(`the fake pass does not ${what}`));

/** The runtime I/O as far as the reconciler itself uses it; the fake pass decides the rest. */
class FakeOps implements RuntimeOps {
  applied: KubernetesObject[][] = [];
  connected = 0;
  refused: RuntimeUnreachableError | undefined;
  driftAfter: number | undefined;
  /** The resourceVersion of the CR the pass was given, or what its own writes left. */
  rv: string | undefined;
  resourceVersion = (): string | undefined => this.rv;
  addFinalizer = (): Promise<void> => refuse('add a finalizer');
  releaseFinalizer = (): Promise<void> => refuse('release a finalizer');
  connect = (): void => {
    this.connected++;
  };
  answered = (): boolean => true;
  drift = (): Promise<undefined> => Promise.resolve(undefined);
  apply = (objects: readonly KubernetesObject[]): Promise<void> => {
    this.applied.push([...objects]);
    return Promise.resolve();
  };
  register = (): ReturnType<RuntimeOps['register']> => refuse('register the webhook');
  trustBundleApi = (): ReturnType<RuntimeOps['trustBundleApi']> =>
    Promise.resolve(servedTrustBundleApi('v1'));
  admissionPolicyApi = (): ReturnType<RuntimeOps['admissionPolicyApi']> =>
    Promise.resolve({ served: false, found: 'none' });
  deploymentReadiness = (): ReturnType<RuntimeOps['deploymentReadiness']> => refuse('read readiness');
  uninstall = (): Promise<void> => refuse('uninstall');
  foreignWrites = (): ReturnType<RuntimeOps['foreignWrites']> => refuse('read foreign writes');
  readServing = (): ReturnType<RuntimeOps['readServing']> => refuse('read the serving Secret');
  readForeignServers = (): Promise<boolean> => refuse('read foreign servers');
  writeServingSecret = (_current: V1Secret | undefined): Promise<V1Secret> =>
    refuse('write the serving Secret');
  writeCaBundle = (): ReturnType<RuntimeOps['writeCaBundle']> => refuse('write a caBundle');
  readWebhookReport = (): ReturnType<RuntimeOps['readWebhookReport']> => refuse('read the report');
  observed = (): ReturnType<RuntimeOps['observed']> => [];
  driftNotAfter = (): number | undefined => this.driftAfter;
  refusal = (): RuntimeUnreachableError | undefined => this.refused;
  writePreflight = (): Promise<void> => refuse('write a preflight Secret');
}

/**
 * What the fake first state of one pass does: reads the context it was given, may change the
 * status, and ends the states' work (the real last state follows) or hands on what it found.
 */
type Pass = (ctx: StateContext, ops: FakeOps, found: Found) => Step | Promise<Step>;

/** Goes on with `found` changed by `change`, then ends Ready. */
const foundThenReady =
  (change: Partial<Found>): Pass =>
  (ctx, _ops, found) =>
    goTo(() => Promise.resolve(ready(ctx)), { ...found, ...change });

/** Ends Ready; applies the set where the runtime does not hold it yet (as the real states do). */
const ready = (ctx: StateContext): Outcome => {
  ctx.status.state('Ready');
  if (ctx.rb.status?.appliedVersion !== 'v2') ctx.status.applied({ appliedVersion: 'v2' });
  return {};
};
const failing = (ctx: StateContext): Outcome => {
  ctx.status.state('Error').condition('ConfigurationSynced', 'False', 'ApplyFailed', 'apply failed');
  return { error: new Error('apply failed') };
};

/** A KCP access that is never called here: status writes go through the fake writer. */
const unusedKcp: ClusterAccess = {
  getCurrentCluster: () => null,
  applyToHTTPSOptions: () => Promise.reject(new Error('no request to the KCP in this test')),
};

interface Harness {
  readonly reconciler: BootstrapperReconciler;
  readonly store: Store<RuntimeBootstrapper>;
  readonly ops: FakeOps;
  /** The forceResync of every pass, in order. */
  readonly forced: boolean[];
  /** The servingCurrentUntil each pass was given. */
  readonly servingGiven: (number | undefined)[];
  /** Status writes, in order. */
  readonly writes: RuntimeBootstrapper['status'][];
  /** The CR as the API server stores it (the cache, `store`, may lag it). */
  readonly server: { resourceVersion: string | undefined };
  readonly reconciled: [string, boolean][];
  readonly metrics: DirectMetrics;
  readonly registry: Registry;
  /** The passes to run, in order (the last repeats). */
  passes: Pass[];
}

function harness(
  rb: RuntimeBootstrapper | null = bootstrapper(),
  extra: Partial<ReconcilerDeps> = {},
): Harness {
  const store = new Store<RuntimeBootstrapper>();
  if (rb) store.replace([rb]);
  const ops = new FakeOps();
  const registry = new Registry();
  const metrics = createDirectMetrics(registry);
  const h: Harness = {
    store,
    ops,
    forced: [],
    servingGiven: [],
    writes: [],
    server: { resourceVersion: rb?.metadata.resourceVersion },
    reconciled: [],
    metrics,
    registry,
    passes: [ready],
    reconciler: undefined as unknown as BootstrapperReconciler,
  };
  const reconciler = new BootstrapperReconciler({
    settings: resolveDirectModeSettings({ release: { image: 'example.com/rtb:1', version: '1.0.0' } }),
    kcp: unusedKcp,
    bootstrappers: store,
    kubeconfigSecrets: new Store<V1Secret>(),
    pool: new RuntimeClientPool(),
    cas: {
      current: () => {
        throw new Error('no CA in this test');
      },
      trustBundle: () => '',
    },
    currentSet: () => ({ result: SET, changedAt: Date.now() - 1_000 }),
    metrics,
    logger: silentLogger(),
    onReconciled: (key, ok) => {
      h.reconciled.push([key, ok]);
    },
    opsFor: (rb) => {
      ops.rv = rb.metadata.resourceVersion;
      return ops;
    },
    firstState: async (ctx, found) => {
      h.forced.push(ctx.forceResync);
      h.servingGiven.push(ctx.servingCurrentUntil);
      const pass = h.passes.length > 1 ? h.passes.shift() : h.passes[0];
      assert.ok(pass);
      return pass(ctx, ops, found);
    },
    writeStatus: (written, status, resourceVersion) => {
      // As the API server does: only onto the copy it was computed from.
      if (resourceVersion !== h.server.resourceVersion) {
        return Promise.reject(new KubeApiError('status write', { statusCode: 409, reason: 'Conflict' }));
      }
      h.writes.push(status);
      h.server.resourceVersion = String(Number(resourceVersion) + 1);
      // As the watch would bring it back.
      store.replace([
        { ...written, metadata: { ...written.metadata, resourceVersion: h.server.resourceVersion }, status },
      ]);
      return Promise.resolve();
    },
    ...extra,
  });
  return Object.assign(h, { reconciler });
}

/** Makes `ops` answer the webhook's report with nothing, counting the reads. */
function countReportReads(ops: FakeOps): { count: number } {
  const reads = { count: 0 };
  ops.readWebhookReport = () => {
    reads.count++;
    return Promise.resolve({});
  };
  return reads;
}

async function counterValue(registry: Registry, name: string): Promise<number> {
  const metric = registry.getSingleMetric(name);
  const values = (await metric?.get())?.values ?? [];
  return values.reduce((sum, v) => sum + v.value, 0);
}

/** A forced pass whose runtime calls fail with `refusal`: the harness once the pass failed with it. */
async function forcedPassRefused(refusal: RuntimeUnreachableError): Promise<Harness> {
  const h = harness();
  h.ops.refused = refusal;
  h.reconciler.force(KEY);
  await assert.rejects(h.reconciler.reconcile(KEY), new RegExp(refusal.message));
  return h;
}

/** The runtime answers again: the next pass is still forced (the force was kept). */
async function forcedAgainOnceAnswered(h: Harness): Promise<void> {
  h.ops.refused = undefined;
  await h.reconciler.reconcile(KEY);
  assert.deepEqual(h.forced, [true, true]);
}

describe('BootstrapperReconciler', () => {
  test('a forced pass is forced once: force() reaches the next pass only', async () => {
    const h = harness();
    await h.reconciler.reconcile(KEY);
    h.reconciler.force(KEY);
    await h.reconciler.reconcile(KEY);
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(h.forced, [false, true, false]);
  });

  test('a forced pass that fails is forced again, until one succeeds', async () => {
    const h = harness();
    h.passes = [failing, failing, ready, ready];
    h.reconciler.force(KEY);
    await assert.rejects(h.reconciler.reconcile(KEY), /apply failed/);
    await assert.rejects(h.reconciler.reconcile(KEY), /apply failed/);
    await h.reconciler.reconcile(KEY);
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(h.forced, [true, true, true, false]);
  });

  test('an unforced pass that fails stays unforced', async () => {
    const h = harness();
    h.passes = [failing, ready];
    await assert.rejects(h.reconciler.reconcile(KEY), /apply failed/);
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(h.forced, [false, false]);
  });

  test('a failed pass writes its status, counts the reason and reports not ok', async () => {
    const h = harness();
    h.passes = [failing];
    await assert.rejects(h.reconciler.reconcile(KEY));
    assert.equal(h.writes.length, 1);
    assert.equal(h.writes[0]?.state, 'Error');
    assert.deepEqual(h.reconciled, [[KEY, false]]);
    assert.equal(await counterValue(h.registry, 'rtb_runtime_sync_errors_total'), 1);
  });

  test('the status is written only when it changed', async () => {
    const h = harness();
    await h.reconciler.reconcile(KEY);
    await h.reconciler.reconcile(KEY);
    assert.equal(h.writes.length, 1, 'the second pass found the same status');
    assert.equal(h.writes[0]?.state, 'Ready');
    assert.equal(h.writes[0].appliedVersion, 'v2');
    assert.deepEqual(h.reconciled, [
      [KEY, true],
      [KEY, true],
    ]);
  });

  test('the propagation time is observed when the set version first reaches the runtime', async () => {
    const h = harness();
    await h.reconciler.reconcile(KEY);
    await h.reconciler.reconcile(KEY);
    const histogram = (await h.registry.getSingleMetric('rtb_propagation_seconds')?.get())?.values ?? [];
    const count = histogram.find(
      (v) => 'metricName' in v && v.metricName === 'rtb_propagation_seconds_count',
    )?.value;
    assert.equal(count, 1);
  });

  test('the pass asks to run again at its outcome’s time', async () => {
    const h = harness();
    h.passes = [
      (ctx) => {
        ready(ctx);
        return { requeueAfterMs: 5_000 };
      },
      ready,
    ];
    assert.deepEqual(await h.reconciler.reconcile(KEY), { requeueAfter: 5_000 });
    // Ready with nothing else due: the slow look at the runtime's workloads.
    assert.deepEqual(await h.reconciler.reconcile(KEY), { requeueAfter: WORKLOAD_SLOW_LOOK_MS });
  });

  test('where the policy mounted the bundle and the runtime now says it must not: a forced pass, soon', async () => {
    // A set with a bundle, a runtime whose policy was written while the projection was Kept.
    const bundle = {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'ClusterTrustBundle',
      metadata: { name: 'kyma-ca' },
    };
    const withBundle: SyncSetResult = {
      ok: true,
      set: { ...SET.set, objects: [...SET.set.objects, bundle] },
    };
    const kept = keptTrustProjection(new Date());
    const h = harness(
      bootstrapper({
        state: 'Ready',
        appliedVersion: 'v2',
        admissionPolicyAPI: 'admissionregistration.k8s.io/v1',
        conditions: [kept],
      }),
      { currentSet: () => ({ result: withBundle, changedAt: Date.now() - 1_000 }) },
    );
    h.passes = [
      (ctx) => {
        ready(ctx);
        ctx.status.condition(
          'TrustBundleProjection',
          'False',
          'KubeletTooOld',
          'pool legacy (v1.34.4, 1 node)',
        );
        return {};
      },
      ready,
    ];
    assert.deepEqual(await h.reconciler.reconcile(KEY), { requeueAfter: UNMOUNT_REQUEUE_MS });
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(h.forced, [false, true], 'the forced pass writes the policy parameters again');
  });

  test('a pass that wrote a new set reads no report for its workloads; the next pass at rest does', async () => {
    // The set of a Ready runtime rotated: the pass applies v2 over v1 and writes nothing else.
    const h = harness(bootstrapper({ state: 'Ready', appliedVersion: 'v1' }));
    const reads = countReportReads(h.ops);
    h.passes = [ready, ready];
    assert.deepEqual(await h.reconciler.reconcile(KEY), { requeueAfter: WORKLOAD_SLOW_LOOK_MS });
    assert.equal(reads.count, 0, 'no Pod can be under a set just written');
    await h.reconciler.reconcile(KEY);
    assert.equal(reads.count, 1);
  });

  test('a pass that (re)applied the webhook reads no report for its workloads either', async () => {
    const h = harness(bootstrapper({ state: 'Ready', appliedVersion: 'v2' }));
    const reads = countReportReads(h.ops);
    h.passes = [foundThenReady({ wrote: true })];
    assert.deepEqual(await h.reconciler.reconcile(KEY), { requeueAfter: WORKLOAD_SLOW_LOOK_MS });
    assert.equal(reads.count, 0);
  });

  test('a serving certificate found current is handed to the next pass, and forgotten when a pass did not find it', async () => {
    const h = harness();
    const until = Date.now() + 60_000;
    h.passes = [foundThenReady({ servingCheckedUntil: until }), ready, ready];
    await h.reconciler.reconcile(KEY);
    await h.reconciler.reconcile(KEY);
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(h.servingGiven, [undefined, until, undefined]);
  });

  test('the drift client certificate’s notAfter is kept from a good pass only, and forgotten with the CR', async () => {
    const h = harness();
    h.ops.driftAfter = 1_234;
    h.passes = [failing, ready];
    await assert.rejects(h.reconciler.reconcile(KEY));
    assert.equal(h.reconciler.driftCertificateNotAfter(KEY), undefined);
    await h.reconciler.reconcile(KEY);
    assert.equal(h.reconciler.driftCertificateNotAfter(KEY), 1_234);
    h.store.replace([]);
    assert.equal(await h.reconciler.reconcile(KEY), undefined);
    assert.equal(h.reconciler.driftCertificateNotAfter(KEY), undefined);
  });

  test('a CR deleted leaves nothing behind: one made again under its key starts fresh', async () => {
    const h = harness();
    const reads = countReportReads(h.ops);
    h.ops.driftAfter = 1_234;
    const until = Date.now() + 60_000;
    h.passes = [foundThenReady({ servingCheckedUntil: until })];
    await h.reconciler.reconcile(KEY);
    await h.reconciler.reconcile(KEY);
    assert.equal(reads.count, 1, 'the workloads were read once at rest');
    h.reconciler.force(KEY);
    h.store.replace([]);
    assert.equal(await h.reconciler.reconcile(KEY), undefined);
    assert.equal(h.reconciler.driftCertificateNotAfter(KEY), undefined);
    h.ops.driftAfter = undefined;
    h.store.replace([bootstrapper({ state: 'Ready', appliedVersion: 'v2' })]);
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(h.forced, [false, false, false], 'a force owed to the deleted CR is not the new one’s');
    assert.deepEqual(h.servingGiven, [undefined, until, undefined]);
    assert.equal(reads.count, 2, 'its workloads are due at once');
    assert.equal(h.reconciler.driftCertificateNotAfter(KEY), undefined);
  });

  test('a CR that is gone: no pass, no write', async () => {
    const h = harness(null);
    assert.equal(await h.reconciler.reconcile(KEY), undefined);
    assert.deepEqual(h.forced, []);
    assert.deepEqual(h.writes, []);
  });

  test('a pass whose Lease was lost writes no status, keeps the force for the next owner and counts it', async () => {
    const h = harness();
    let held = true;
    const fence: LeaseFence = () => held;
    h.passes = [
      (ctx) => {
        held = false;
        ready(ctx);
        return { error: new LeaseLostError('apply') };
      },
      ready,
    ];
    h.reconciler.force(KEY);
    assert.equal(await h.reconciler.reconcile(KEY, fence), undefined);
    assert.deepEqual(h.writes, []);
    assert.deepEqual(h.reconciled, []);
    assert.equal(await counterValue(h.registry, 'rtb_shard_fenced_passes_total'), 1);
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(h.forced, [true, true]);
  });

  test('a call that broke a bound fails a pass that went on: Error with RuntimeReachable, forced again', async () => {
    const h = await forcedPassRefused(new RuntimeUnreachableError('too slow', undefined, 'DeadlineExceeded'));
    assert.equal(h.writes[0]?.state, 'Error');
    const reachable = h.writes[0].conditions?.find((c) => c.type === 'RuntimeReachable');
    assert.equal(reachable?.status, 'False');
    assert.equal(reachable.reason, 'DeadlineExceeded');
    await forcedAgainOnceAnswered(h);
  });

  test('a pass abandoned because the process stops writes nothing and keeps the force', async () => {
    const h = await forcedPassRefused(new RuntimeUnreachableError('stopping', undefined, 'Stopping'));
    assert.deepEqual(h.writes, []);
    await forcedAgainOnceAnswered(h);
  });

  test('a repair applies the set only to an installed, unpaused runtime', async () => {
    const notInstalled = harness();
    assert.equal(await notInstalled.reconciler.repairSet(KEY), true);
    assert.deepEqual(notInstalled.ops.applied, []);

    const paused = harness(bootstrapper({ appliedVersion: 'v1' }, { paused: true }));
    assert.equal(await paused.reconciler.repairSet(KEY), true);
    assert.deepEqual(paused.ops.applied, []);

    const installed = harness(bootstrapper({ appliedVersion: 'v1' }));
    assert.equal(await installed.reconciler.repairSet(KEY), true);
    assert.equal(installed.ops.connected, 1);
    assert.deepEqual(
      installed.ops.applied.map((objects) => objects.map((o) => `${o.kind}/${o.metadata?.name}`)),
      [['Namespace/kyma-system', 'Secret/registry-credentials']],
    );
  });

  test("a repair's calls are urgent (not paced behind a fan-out's answers); a reconcile's are not", async () => {
    const urgent: (boolean | undefined)[] = [];
    const h = harness(bootstrapper({ appliedVersion: 'v1' }), {
      opsFor: (_rb, _fence, u) => {
        urgent.push(u);
        return h.ops;
      },
    });
    await h.reconciler.repairSet(KEY);
    await h.reconciler.reconcile(KEY);
    assert.deepEqual(urgent, [true, undefined]);
  });

  test('a repair of reported objects writes those of the set only, and nothing for objects not of the set', async () => {
    const h = harness(bootstrapper({ appliedVersion: 'v1' }));
    assert.equal(
      await h.reconciler.repairSet(KEY, undefined, new Set(['Secret/kyma-system/registry-credentials'])),
      true,
    );
    assert.deepEqual(
      h.ops.applied.map((objects) => objects.map((o) => `${o.kind}/${o.metadata?.name}`)),
      [['Secret/registry-credentials']],
    );

    const other = harness(bootstrapper({ appliedVersion: 'v1' }));
    const notOfTheSet = new Set([
      'Deployment/kyma-system/rt-bootstrapper',
      'Secret/other/registry-credentials',
    ]);
    assert.equal(await other.reconciler.repairSet(KEY, undefined, notOfTheSet), false);
    assert.deepEqual(other.ops.applied, []);
    assert.equal(other.ops.connected, 0);
  });

  test('a status write the KCP refuses with 429 slows the fan-out; other refusals do not', async () => {
    for (const [code, slowed] of [
      [429, 1],
      [500, 0],
    ] as const) {
      let throttled = 0;
      const h = harness(bootstrapper(), {
        writeStatus: () => Promise.reject(new KubeApiError('status write', { statusCode: code })),
        kcpThrottled: () => {
          throttled++;
        },
      });
      h.passes = [ready];
      await assert.rejects(h.reconciler.reconcile(KEY), /status write/);
      assert.equal(throttled, slowed, String(code));
    }
  });

  test('a status built on a copy of the CR older than the stored one is not written: the pass runs again, quietly', async () => {
    const h = harness();
    const marked: Pass = (ctx) => {
      ctx.status.state('Ready').condition('Degraded', 'True', 'WorkloadsFailing', 'failing Pods');
      return {};
    };
    h.passes = [marked];
    // A write stored by the API server that the cache has not brought yet.
    h.server.resourceVersion = '2';
    assert.deepEqual(await h.reconciler.reconcile(KEY), { requeueAfter: STATUS_CONFLICT_REQUEUE_MS });
    assert.deepEqual(h.writes, []);
    assert.deepEqual(h.reconciled, [], 'not counted as reconciled');
    assert.equal(await counterValue(h.registry, 'rtb_runtime_sync_errors_total'), 0, 'not a sync error');
    // The cache brings the CR as stored: the next pass writes.
    const rb = h.store.get(KEY);
    assert.ok(rb);
    h.store.replace([{ ...rb, metadata: { ...rb.metadata, resourceVersion: '2' } }]);
    await h.reconciler.reconcile(KEY);
    assert.equal(h.writes.length, 1);
  });

  test('a look at the workloads whose status write was lost is made again by the next pass', async () => {
    const h = harness(bootstrapper({ state: 'Ready', appliedVersion: 'v2' }));
    let reads = 0;
    h.ops.readWebhookReport = () => {
      reads++;
      return Promise.resolve({ workloads: {} });
    };
    h.passes = [ready, ready];
    // The copy the pass read is older than the stored CR: its status write is refused (409).
    h.server.resourceVersion = '2';
    assert.deepEqual(await h.reconciler.reconcile(KEY), { requeueAfter: STATUS_CONFLICT_REQUEUE_MS });
    assert.equal(reads, 1);
    const rb = h.store.get(KEY);
    assert.ok(rb);
    h.store.replace([{ ...rb, metadata: { ...rb.metadata, resourceVersion: '2' } }]);
    await h.reconciler.reconcile(KEY);
    assert.equal(reads, 2, 'the lost look is due again, not 60 s later');
    assert.equal(h.writes[0]?.workloads?.revision, 'v2');
  });

  test("the status write is based on the pass's own finalizer write, not the copy it read", async () => {
    const h = harness();
    h.ops.addFinalizer = () => {
      // The finalizer write bumps the stored resourceVersion, as the API server does.
      h.server.resourceVersion = '2';
      h.ops.rv = '2';
      return Promise.resolve();
    };
    h.passes = [
      async (ctx, _ops, found) => {
        await ctx.ops.addFinalizer();
        return goTo(() => Promise.resolve(ready(ctx)), found);
      },
    ];
    await h.reconciler.reconcile(KEY);
    assert.equal(h.writes.length, 1);
  });

  test('a repair stopped by its fence says so; any other failure is thrown', async () => {
    const h = harness(bootstrapper({ appliedVersion: 'v1' }));
    h.ops.apply = () => Promise.reject(new LeaseLostError('apply'));
    assert.equal(await h.reconciler.repairSet(KEY), false);
    h.ops.apply = () => Promise.reject(new Error('boom'));
    await assert.rejects(h.reconciler.repairSet(KEY), /boom/);
  });
});
