import type { KubernetesObject } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import {
  runStateMachine,
  sFnInitialize,
  type BootstrapperOps,
  type StateContext,
} from '../../../../src/controller/direct/state-machine.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import type { ForeignWrite } from '../../../../src/controller/direct/foreign-writers.js';
import { buildSyncSet, type SyncSetResult } from '../../../../src/controller/direct/sync-set.js';
import { seedConfigText } from '../../../support/fixtures.js';

/** Records the calls the states make; each can be told to fail. */
class RecordingOps implements BootstrapperOps {
  calls: string[] = [];
  fail = new Set<string>();
  ready = true;
  private step(name: string): Promise<void> {
    this.calls.push(name);
    return this.fail.has(name) ? Promise.reject(new Error(`${name} failed`)) : Promise.resolve();
  }
  addFinalizer = () => this.step('addFinalizer');
  releaseFinalizer = () => this.step('releaseFinalizer');
  connect = () => this.step('connect');
  webhookTls = async () => {
    await this.step('webhookTls');
    return { certPem: 'C', keyPem: 'K', caPem: 'CA' };
  };
  apply = (objects: readonly KubernetesObject[]) =>
    this.step(`apply:${objects.map((o) => o.kind).join(',')}`);
  deploymentReadiness = async () => {
    await this.step('readiness');
    return { ready: this.ready, message: this.ready ? 'ok' : 'rolling' };
  };
  uninstall = () => this.step('uninstall');
  drift = () => Promise.resolve(undefined);
  /** What foreignWrites answers; a test sets it to play KIM still writing. */
  foreign: ForeignWrite[] = [];
  /** The kinds of the objects foreignWrites was asked about. */
  ownershipKinds: string[] = [];
  foreignWrites = async (objects: readonly KubernetesObject[]) => {
    this.ownershipKinds = objects.map((o) => o.kind ?? '');
    await this.step('foreignWrites');
    return this.foreign;
  };
}

const set: SyncSetResult = buildSyncSet({
  version: 'v-1',
  clusterTrustBundle: { metadata: { name: 'rt-bootstrapper-k3d.test:ctb:1' }, spec: { trustBundle: 'PEM' } },
  configMap: {
    metadata: { name: 'c', namespace: 'kcp-system' },
    data: { 'rt-bootstrapper-config.json': seedConfigText() },
  },
  pullSecret: { metadata: { name: 's', namespace: 'kcp-system' }, data: {} },
});

const rb = (
  over: Partial<RuntimeBootstrapper['metadata']> = {},
  spec: Partial<RuntimeBootstrapper['spec']> = {},
  status?: RuntimeBootstrapper['status'],
): RuntimeBootstrapper => ({
  metadata: {
    name: 'rt',
    namespace: 'kcp-system',
    generation: 3,
    finalizers: ['rt-bootstrapper.kyma-project.io/cleanup'],
    ...over,
  },
  spec: { runtimeID: 'rt', ...spec },
  ...(status ? { status } : {}),
});

async function run(
  r: RuntimeBootstrapper,
  ops: RecordingOps,
  opts: { set?: SyncSetResult; force?: boolean } = {},
) {
  const status = new StatusBuilder(r, new Date('2026-11-22T10:00:00Z'));
  const ctx: StateContext = {
    rb: r,
    set: opts.set ?? set,
    release: { image: 'i', version: '1.0.0' },
    forceResync: opts.force ?? false,
    ops,
    status,
    wrote: false,
  };
  const outcome = await runStateMachine(sFnInitialize, ctx);
  return { outcome, status: status.build() };
}

const cond = (s: RuntimeBootstrapper['status'], type: string) => s?.conditions?.find((c) => c.type === type);

describe('the per-runtime state machine', () => {
  test('a new CR: finalizer, connect, sources in order, webhook, wait, register, Ready', async () => {
    const ops = new RecordingOps();
    const { outcome, status } = await run(rb({ finalizers: [] }), ops);
    assert.deepEqual(ops.calls, [
      'addFinalizer',
      'connect',
      'apply:Namespace,ClusterTrustBundle,Secret,ConfigMap',
      'webhookTls',
      'apply:ServiceAccount,ClusterRole,ClusterRoleBinding,Role,RoleBinding,Secret,Service,NetworkPolicy,NetworkPolicy,NetworkPolicy,Deployment,PodDisruptionBudget',
      'readiness',
      'webhookTls',
      'apply:MutatingWebhookConfiguration',
      'foreignWrites',
    ]);
    assert.deepEqual(outcome, {});
    assert.equal(status.state, 'Ready');
    assert.equal(cond(status, 'ExclusivelyManaged')?.status, 'True');
    // Only what KIM writes on each of its passes is read back, not every object.
    assert.deepEqual(ops.ownershipKinds.sort(), ['ConfigMap', 'Deployment', 'MutatingWebhookConfiguration']);
    assert.equal(status.appliedVersion, 'v-1');
    assert.equal(status.webhookVersion, '1.0.0');
    assert.equal(status.observedGeneration, 3);
    for (const t of ['RuntimeReachable', 'Installed', 'ConfigurationSynced', 'WebhookReady'])
      assert.equal(cond(status, t)?.status, 'True', t);
  });

  test('KIM still writing after a takeover: Ready, with ExclusivelyManaged False naming the write', async () => {
    const ops = new RecordingOps();
    ops.foreign = [
      {
        object: 'Deployment kyma-system/rt-bootstrapper-controller-manager',
        manager: 'kim-bootstrapper',
        time: '2026-11-22T10:00:05.000Z',
      },
    ];
    const { outcome, status } = await run(rb(), ops, { force: true });
    assert.deepEqual(outcome, {});
    assert.equal(status.state, 'Ready');
    const c = cond(status, 'ExclusivelyManaged');
    assert.ok(c);
    assert.equal(c.status, 'False');
    assert.equal(c.reason, 'OtherFieldManager');
    assert.match(
      c.message,
      /kim-bootstrapper wrote Deployment kyma-system\/rt-bootstrapper-controller-manager/,
    );
  });

  test('a failed ownership read keeps Ready and the condition as it was', async () => {
    const ops = new RecordingOps();
    ops.fail.add('foreignWrites');
    const { outcome, status } = await run(rb(), ops, { force: true });
    assert.deepEqual(outcome, {});
    assert.equal(status.state, 'Ready');
    assert.equal(cond(status, 'ExclusivelyManaged'), undefined);
  });

  test('a rollout in progress: Installing, no registration, poll again', async () => {
    const ops = new RecordingOps();
    ops.ready = false;
    const { outcome, status } = await run(rb(), ops);
    assert.equal(status.state, 'Installing');
    assert.equal(cond(status, 'WebhookReady')?.status, 'False');
    assert.ok(!ops.calls.includes('apply:MutatingWebhookConfiguration'));
    assert.equal(outcome.requeueAfterMs, 5_000);
  });

  test('a runtime already at the version and release gets no writes', async () => {
    const ready = await run(rb(), new RecordingOps());
    const ops = new RecordingOps();
    const { status } = await run(rb({}, {}, ready.status), ops);
    assert.deepEqual(ops.calls, ['connect', 'readiness']);
    assert.equal(status.state, 'Ready');
  });

  test('a forced resync re-applies everything', async () => {
    const ready = await run(rb(), new RecordingOps());
    const ops = new RecordingOps();
    await run(rb({}, {}, ready.status), ops, { force: true });
    assert.ok(ops.calls.some((c) => c.startsWith('apply:Namespace')));
    assert.ok(ops.calls.includes('apply:MutatingWebhookConfiguration'));
  });

  test('unreachable: Error with RuntimeReachable False and a retry', async () => {
    const ops = new RecordingOps();
    ops.fail.add('connect');
    const { outcome, status } = await run(rb(), ops);
    assert.equal(status.state, 'Error');
    assert.equal(cond(status, 'RuntimeReachable')?.status, 'False');
    assert.match(cond(status, 'RuntimeReachable')?.message ?? '', /connect failed/);
    assert.ok(outcome.error);
    assert.deepEqual(ops.calls, ['connect']);
  });

  test('an inconsistent set: no writes, the reason in the status', async () => {
    const ops = new RecordingOps();
    const { status } = await run(rb(), ops, { set: { ok: false, reason: 'the config names X' } });
    assert.deepEqual(ops.calls, ['connect']);
    assert.equal(cond(status, 'ConfigurationSynced')?.reason, 'InconsistentSources');
    assert.equal(cond(status, 'ConfigurationSynced')?.message, 'the config names X');
  });

  test('paused: no I/O on the runtime at all', async () => {
    const ops = new RecordingOps();
    const { status } = await run(rb({}, { paused: true }), ops);
    assert.deepEqual(ops.calls, []);
    assert.equal(status.state, 'Paused');
  });

  test('deletion: uninstall, then release; unreachable keeps the finalizer; force-release skips the runtime', async () => {
    const deleting = { deletionTimestamp: new Date() };
    const ok = new RecordingOps();
    await run(rb(deleting), ok);
    assert.deepEqual(ok.calls, ['connect', 'uninstall', 'releaseFinalizer']);
    const down = new RecordingOps();
    down.fail.add('connect');
    const r = await run(rb(deleting), down);
    assert.deepEqual(down.calls, ['connect']);
    assert.equal(r.status.state, 'Deleting');
    assert.match(cond(r.status, 'RuntimeReachable')?.message ?? '', /force-release/);
    const forced = new RecordingOps();
    forced.fail.add('connect');
    await run(
      rb({ ...deleting, annotations: { 'rt-bootstrapper.kyma-project.io/force-release': 'true' } }),
      forced,
    );
    assert.deepEqual(forced.calls, ['releaseFinalizer']);
  });

  test('a condition keeps its transition time while its status does not change', async () => {
    const first = await run(rb(), new RecordingOps());
    const t0 = cond(first.status, 'Installed')?.lastTransitionTime;
    const status = new StatusBuilder(rb({}, {}, first.status), new Date('2026-11-23T00:00:00Z'));
    status.condition('Installed', 'True', 'Applied', 'again');
    assert.equal(cond(status.build(), 'Installed')?.lastTransitionTime, t0);
    status.condition('Installed', 'False', 'Broken', 'x');
    assert.equal(cond(status.build(), 'Installed')?.lastTransitionTime, '2026-11-23T00:00:00.000Z');
  });
});
