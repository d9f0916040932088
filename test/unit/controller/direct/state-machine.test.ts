import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { trustBundleHash, type TrustRestartStatus } from '../../../../src/api/trust-stamp.js';
import {
  ENDPOINTS_RECHECK_MS,
  ROLLOUT_POLL_MS,
  ROLLOUT_WATCHED_MS,
  runStateMachine,
  sFnInitialize,
} from '../../../../src/controller/direct/state-machine.js';
import type { DeploymentReadiness } from '../../../../src/controller/direct/runtime-installer.js';
import type { BootstrapperOps } from '../../../../src/controller/direct/state-context.js';
import type { ServingView } from '../../../../src/controller/direct/serving-certificate.js';
import { RuntimeUnreachableError } from '../../../../src/controller/direct/runtime-unreachable.js';
import { StatusBuilder, statusChanged } from '../../../../src/controller/direct/status-builder.js';
import type { ForeignWrite } from '../../../../src/controller/direct/foreign-writers.js';
import { buildSyncSet, type SyncSetResult } from '../../../../src/controller/direct/sync-set.js';
import { isSetObject, SetLedger } from '../../../../src/controller/direct/set-writes.js';
import {
  createCertificateAuthority,
  type CertificateAuthority,
} from '../../../../src/pki/certificate-authority.js';
import type { SecretWrite } from '../../../../src/serving-cert/serving-secret-plan.js';
import { seedConfigText, syncSources } from '../../../support/fixtures.js';
import { endOfWork, FakeServingRuntime, START } from './fake-serving-runtime.js';
import { servedTrustBundleApi, type TrustBundleApi } from '../../../../src/kube/trust-bundle-api.js';
import type { AdmissionPolicyApi } from '../../../../src/controller/direct/admission-policy-plan.js';
import { stateContext } from '../../../support/state-context.js';

let kcpCa: CertificateAuthority;
before(async () => {
  kcpCa = await createCertificateAuthority({ commonName: 'kcp', now: new Date(START - 24 * 3600_000) });
});

/** Records the calls the states make; each can be told to fail. The serving objects live in `runtime`. */
class RecordingOps implements BootstrapperOps {
  calls: string[] = [];
  fail = new Set<string>();
  /** Steps that get no answer at all from the runtime. */
  unreachable = new Set<string>();
  ready = true;
  endpointsPending = false;
  /** The trust-bundle restarter's report on the webhook Deployment. */
  trust: TrustRestartStatus | undefined;
  private reached = false;
  constructor(readonly runtime = new FakeServingRuntime(kcpCa)) {}
  private step(name: string): Promise<void> {
    this.calls.push(name);
    if (this.unreachable.has(name))
      return Promise.reject(new RuntimeUnreachableError(`the runtime's API server is unreachable: ${name}`));
    this.reached = true;
    return this.fail.has(name) ? Promise.reject(new Error(`${name} failed`)) : Promise.resolve();
  }
  addFinalizer = () => this.step('addFinalizer');
  releaseFinalizer = () => this.step('releaseFinalizer');
  connect = () => {
    this.calls.push('connect');
    if (this.fail.has('connect')) throw new Error('connect failed');
  };
  answered = () => this.reached;
  /** The runtime's ClusterTrustBundle API (asked without a recorded call: it is remembered per client). */
  api: TrustBundleApi = servedTrustBundleApi('v1');
  trustBundleApi = () => Promise.resolve(this.api);
  /** The runtime's MutatingAdmissionPolicy API (none: the webhook alone). */
  policyApi: AdmissionPolicyApi = { served: false, found: 'discovery found: none' };
  admissionPolicyApi = () => Promise.resolve(this.policyApi);
  /** Every object applied, in order. */
  readonly appliedObjects: KubernetesObject[] = [];
  apply = async (objects: readonly KubernetesObject[], _set?: string) => {
    this.appliedObjects.push(...objects);
    await this.step(`apply:${objects.map((o) => o.kind).join(',')}`);
    this.runtime.register(objects.filter((o) => o.kind?.endsWith('WebhookConfiguration')));
  };
  /** The registration's apply: recorded as an apply, answered with the configurations as held. */
  register = async (objects: readonly KubernetesObject[]) => {
    await this.step(`apply:${objects.map((o) => o.kind).join(',')}`);
    return this.runtime.register(objects);
  };
  deploymentReadiness = async () => {
    await this.step('readiness');
    return {
      ready: this.ready,
      endpointsPending: this.endpointsPending,
      message: this.ready ? 'ok' : 'rolling',
      ...(this.trust ? { trust: this.trust } : {}),
    };
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
  readServing = async () => {
    await this.step('readServing');
    return this.runtime.view();
  };
  readForeignServers = async () => {
    await this.step('readForeignServers');
    return this.runtime.foreignServers();
  };
  writeServingSecret = async (current: V1Secret | undefined, write: SecretWrite) => {
    await this.step('writeServingSecret');
    return await this.runtime.writeSecret(current, write);
  };
  writeCaBundle = async (view: ServingView, bundlePem: string) => {
    await this.step('writeCaBundle');
    return await this.runtime.writeBundle(view, bundlePem);
  };
  readWebhookReport = async () => {
    await this.step('readWebhookReport');
    return {};
  };
  observed = () => [];
  refusal = () => undefined;
  writePreflight = () => this.step('writePreflight');
}

/** A consistent set of `version` whose pull Secret holds `data` and trust bundle `pem`. */
const setOf = (version: string, data: Record<string, string> = {}, pem = 'PEM'): SyncSetResult =>
  buildSyncSet({
    version,
    clusterTrustBundle: {
      metadata: { name: 'rt-bootstrapper-k3d.test:ctb:1' },
      spec: { trustBundle: pem },
    },
    configMap: {
      metadata: { name: 'c', namespace: 'kcp-system' },
      data: { 'rt-bootstrapper-config.json': seedConfigText() },
    },
    pullSecret: { metadata: { name: 's', namespace: 'kcp-system' }, data },
  });

const set = setOf('v-1');
/** How the runtime's restarter names the set's bundle. */
const SET_BUNDLE = trustBundleHash('PEM').slice(0, 12);

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
  opts: { set?: SyncSetResult; force?: boolean; servingCurrentUntil?: number } = {},
) {
  const status = new StatusBuilder(r, new Date(ops.runtime.now));
  const ctx = stateContext({
    rb: r,
    set: opts.set ?? set,
    forceResync: opts.force ?? false,
    ops,
    status,
    serving: ops.runtime.settings(),
    servingCurrentUntil: opts.servingCurrentUntil,
  });
  const pass = await runStateMachine(sFnInitialize, ctx, endOfWork);
  return { outcome: pass.outcome, status: status.build(), servingCheckedUntil: pass.servingCheckedUntil };
}

const set2 = setOf('v-2', { x: 'eQ==' });

const cond = (s: RuntimeBootstrapper['status'], type: string) => s?.conditions?.find((c) => c.type === type);

/**
 * A pass of set2 over a runtime left `ready` by an earlier pass (its certificate known current as
 * that pass found it): it calls just `calls` and leaves the runtime Ready at v-2.
 */
async function set2Applied(ready: Awaited<ReturnType<typeof run>>, ops: RecordingOps, calls: string[]) {
  const next = await run(rb({}, {}, ready.status), ops, {
    set: set2,
    servingCurrentUntil: ready.servingCheckedUntil,
  });
  assert.deepEqual(ops.calls, calls);
  assert.equal(next.status.appliedVersion, 'v-2');
  assert.equal(next.status.state, 'Ready');
  return next;
}

describe('the per-runtime state machine', () => {
  test('a new CR: finalizer, connect, sources in order, webhook, certificate, wait, register, caBundle, Ready', async () => {
    const ops = new RecordingOps();
    const { outcome, status } = await run(rb({ finalizers: [] }), ops);
    assert.deepEqual(ops.calls, [
      'addFinalizer',
      'connect',
      // Who else wrote our objects since our last write: read before this pass writes anything.
      'foreignWrites',
      'apply:Namespace,ClusterTrustBundle,Secret,ConfigMap',
      // No serving Secret among the webhook's objects: the protocol writes it.
      'apply:ServiceAccount,ClusterRole,ClusterRoleBinding,Role,RoleBinding,ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding,ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding,ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding,ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding,Service,NetworkPolicy,NetworkPolicy,NetworkPolicy,Deployment,PodDisruptionBudget',
      // Nobody calls the webhook yet: the CA, then at once the certificate, so the Pods can become
      // ready; each step is planned from the answer of the write before it, not from a read.
      'readServing',
      'writeServingSecret',
      'writeServingSecret',
      'readiness',
      'apply:MutatingWebhookConfiguration',
      // The registration was created without a caBundle: the protocol writes it at once, planned
      // from the apply's answer and the Secret it wrote, without reading them again.
      'writeCaBundle',
      'writeServingSecret',
    ]);
    assert.deepEqual(outcome, { requeueAfterMs: 3_600_000 }, 'the certificate is looked at hourly');
    assert.equal(status.state, 'Ready');
    assert.equal(cond(status, 'ServingCertificate')?.reason, 'Current');
    assert.equal(ops.runtime.bundles().length, 1);
    assert.ok(ops.runtime.bundles()[0]?.includes(kcpCa.certPem.trim()), "the caBundle holds the KCP's CA");
    assert.equal(cond(status, 'ExclusivelyManaged')?.status, 'True');
    // Only what KIM writes on each of its passes is read back, not every object.
    assert.deepEqual(ops.ownershipKinds.sort(), ['ConfigMap', 'Deployment', 'MutatingWebhookConfiguration']);
    assert.equal(status.appliedVersion, 'v-1');
    assert.equal(status.webhookVersion, '1.0.0');
    assert.equal(status.observedGeneration, 3);
    for (const t of [
      'RuntimeReachable',
      'Installed',
      'ConfigurationSynced',
      'ServingCertificate',
      'WebhookReady',
    ])
      assert.equal(cond(status, t)?.status, 'True', t);
  });

  test('KIM wrote since our last write: Ready, with ExclusivelyManaged False naming the write', async () => {
    const ops = new RecordingOps();
    ops.foreign = [
      {
        object: 'Deployment kyma-system/rt-bootstrapper-controller-manager',
        manager: 'kim-bootstrapper',
        time: '2026-11-22T10:00:05.000Z',
      },
    ];
    const { outcome, status } = await run(rb(), ops, { force: true });
    assert.equal(outcome.error, undefined);
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
    assert.equal(outcome.error, undefined);
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
    assert.equal(outcome.requeueAfterMs, ROLLOUT_POLL_MS);
  });

  test('new Pods Ready but not yet listed by the Service: Installing, looked at again soon, not followed', async () => {
    const followed: DeploymentReadiness[] = [];
    const ops = Object.assign(new RecordingOps(), {
      followRollout: (readiness: DeploymentReadiness) => followed.push(readiness) > 0,
    });
    ops.ready = false;
    ops.endpointsPending = true;
    const { outcome, status } = await run(rb(), ops);
    assert.equal(status.state, 'Installing');
    assert.ok(!ops.calls.includes('apply:MutatingWebhookConfiguration'));
    assert.equal(outcome.requeueAfterMs, ENDPOINTS_RECHECK_MS);
    assert.deepEqual(followed, [], 'the Deployment will not move again before minReadySeconds');
  });

  test('a rollout in progress that a watch follows: its next move wakes the runtime, the poll is only a backstop', async () => {
    const followed: DeploymentReadiness[] = [];
    const ops = Object.assign(new RecordingOps(), {
      followRollout: (readiness: DeploymentReadiness) => followed.push(readiness) > 0,
    });
    ops.ready = false;
    const { outcome, status } = await run(rb(), ops);
    assert.equal(status.state, 'Installing');
    assert.deepEqual(
      followed.map((r) => r.message),
      ['rolling'],
      'followed from what the pass read',
    );
    assert.equal(outcome.requeueAfterMs, ROLLOUT_WATCHED_MS);
    // Where no watch can follow it (watches full, a failed one), the pass polls.
    const polled = Object.assign(new RecordingOps(), { followRollout: () => false });
    polled.ready = false;
    assert.equal((await run(rb(), polled)).outcome.requeueAfterMs, ROLLOUT_POLL_MS);
  });

  test('a runtime already at the version and release (a restart) gets no writes, only a look at its certificate', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    const ops = new RecordingOps(first.runtime);
    const { status } = await run(rb({}, {}, ready.status), ops);
    assert.deepEqual(ops.calls, ['connect', 'readServing']);
    assert.equal(status.state, 'Ready');
    assert.equal(statusChanged(ready.status, status), false, 'nothing to write to the KCP either');
  });

  test("a new set for a Ready runtime costs the set's applies alone, while its certificate is known current", async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    assert.equal(ready.servingCheckedUntil, first.runtime.now + 3_600_000);
    const ops = new RecordingOps(first.runtime);
    const next = await set2Applied(ready, ops, [
      'connect',
      'apply:Namespace,ClusterTrustBundle,Secret,ConfigMap',
    ]);
    // The certificate's next look stays scheduled (an immediate add cancels a delayed one).
    assert.deepEqual(next.outcome, { requeueAfterMs: 3_600_000 });
    assert.equal(next.servingCheckedUntil, ready.servingCheckedUntil);
    // Once that time has come, or in a new process (nothing known), the certificate is read.
    const later = new RecordingOps(first.runtime);
    await run(rb({}, {}, next.status), later, { set: set2, servingCurrentUntil: first.runtime.now });
    assert.deepEqual(later.calls, ['connect', 'readServing']);
  });

  test('with a record of what was written: a new pull Secret costs the Secret, nothing else', async () => {
    const ledger = new SetLedger();
    const recording = (ops: RecordingOps): RecordingOps => {
      const apply = ops.apply;
      ops.apply = async (objects, set) => {
        await apply(objects);
        for (const o of objects) if (isSetObject(o)) ledger.wrote('kcp-system/rt', o);
        if (set !== undefined) ledger.committed('kcp-system/rt', set);
      };
      Object.assign(ops, { written: () => ledger.get('kcp-system/rt') });
      return ops;
    };
    const first = recording(new RecordingOps());
    const ready = await run(rb(), first);
    assert.ok(first.calls.includes('apply:Namespace,ClusterTrustBundle,Secret,ConfigMap'), 'an install: all');
    const ops = recording(new RecordingOps(first.runtime));
    const next = await set2Applied(ready, ops, ['connect', 'apply:Secret']);
    // A forced pass writes it all again (the same content: no change on the runtime).
    const forced = recording(new RecordingOps(first.runtime));
    await run(rb({}, {}, next.status), forced, { set: set2, force: true });
    assert.ok(forced.calls.includes('apply:Namespace,ClusterTrustBundle,Secret,ConfigMap'));
    // The status not yet at what this process committed (its echo late, another writer): all.
    const unsure = recording(new RecordingOps(first.runtime));
    await run(rb({}, {}, ready.status), unsure, {
      set: setOf('v-3', { x: 'eg==' }),
      servingCurrentUntil: ready.servingCheckedUntil,
    });
    assert.deepEqual(unsure.calls, ['connect', 'apply:Namespace,ClusterTrustBundle,Secret,ConfigMap']);
  });

  test('a forced pass looks at everything: ownership, certificate, rollout', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    const ops = new RecordingOps(first.runtime);
    await run(rb({}, {}, ready.status), ops, {
      force: true,
      ...(ready.servingCheckedUntil !== undefined ? { servingCurrentUntil: ready.servingCheckedUntil } : {}),
    });
    for (const call of ['foreignWrites', 'readServing', 'readiness'])
      assert.ok(ops.calls.includes(call), call);
  });

  test('no answer from the runtime: RuntimeReachable False, the other conditions as they were', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    assert.equal(cond(ready.status, 'RuntimeReachable')?.status, 'True', 'it answered');
    const ops = new RecordingOps(first.runtime);
    ops.unreachable.add('apply:Namespace,ClusterTrustBundle,Secret,ConfigMap');
    const { outcome, status } = await run(rb({}, {}, ready.status), ops, { set: set2 });
    assert.ok(outcome.error instanceof RuntimeUnreachableError);
    assert.equal(status.state, 'Error');
    assert.equal(cond(status, 'RuntimeReachable')?.status, 'False');
    assert.match(cond(status, 'RuntimeReachable')?.message ?? '', /unreachable/);
    assert.equal(cond(status, 'ConfigurationSynced')?.status, 'True', 'the last apply that got through');
    // An answer that is an error is still an answer.
    const refused = new RecordingOps(first.runtime);
    refused.fail.add('apply:Namespace,ClusterTrustBundle,Secret,ConfigMap');
    const r = await run(rb({}, {}, status), refused, { set: set2 });
    assert.equal(cond(r.status, 'RuntimeReachable')?.status, 'True');
    assert.equal(cond(r.status, 'ConfigurationSynced')?.reason, 'ApplyFailed');
  });

  test('the trust-restart count rides on the Deployment read of a forced pass; at rest, no read and no write', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    const ops = new RecordingOps(first.runtime);
    const at = new Date(first.runtime.now - 1_000).toISOString();
    ops.trust = { bundle: SET_BUNDLE, stalePods: 0, barePods: 0, optedOutPods: 2, at };
    const forced = await run(rb({}, {}, ready.status), ops, { force: true });
    assert.equal(ops.calls.filter((c) => c === 'readiness').length, 1, 'the read the pass makes anyway');
    assert.deepEqual(forced.status.trustRestart, {
      bundle: SET_BUNDLE,
      stalePods: 0,
      barePods: 0,
      optedOutPods: 2,
      reportedAt: at,
    });
    // Nothing left to restart: a later pass neither reads the Deployment nor writes the status.
    const rest = new RecordingOps(first.runtime);
    rest.trust = ops.trust;
    const again = await run(rb({}, {}, forced.status), rest);
    assert.deepEqual(rest.calls, ['connect', 'readServing']);
    assert.equal(statusChanged(forced.status, again.status), false);
    assert.deepEqual(again.outcome, forced.outcome);
  });

  test('while Pods are still to be restarted, a Ready pass reads the count and looks again soon', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    const at = new Date(first.runtime.now - 1_000).toISOString();
    const stale = { bundle: SET_BUNDLE, stalePods: 5, barePods: 1, at };
    const seeded = { ...ready.status, trustRestart: { ...stale, reportedAt: at } };
    delete (seeded.trustRestart as { at?: string }).at;
    const ops = new RecordingOps(first.runtime);
    ops.trust = stale;
    const same = await run(rb({}, {}, seeded), ops);
    assert.deepEqual(ops.calls, ['connect', 'readServing', 'readiness']);
    assert.equal(statusChanged(seeded, same.status), false, 'the same count: no status write');
    assert.deepEqual(same.outcome, { requeueAfterMs: 30_000 });
    // The restarts went on: the next look brings the new count, and then rest.
    const later = new RecordingOps(first.runtime);
    later.trust = {
      bundle: SET_BUNDLE,
      stalePods: 1,
      barePods: 1,
      at: new Date(first.runtime.now).toISOString(),
    };
    const done = await run(rb({}, {}, same.status), later);
    assert.equal(done.status.trustRestart?.stalePods, 1);
    assert.equal(
      done.outcome.requeueAfterMs,
      3_600_000,
      'a bare Pod alone is never restarted: no more looks',
    );
    // A count unchanged for long (a restart stuck, a restarter gone) is left to the resync.
    const old = new RecordingOps(first.runtime);
    const stuck = {
      ...seeded,
      trustRestart: {
        ...seeded.trustRestart,
        reportedAt: new Date(first.runtime.now - 3_600_000).toISOString(),
      },
    };
    await run(rb({}, {}, stuck), old);
    assert.deepEqual(old.calls, ['connect', 'readServing']);
  });

  test('a new set whose bundle the runtime does not report yet: its count is read until it does', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    const before = {
      bundle: 'aaaaaaaaaaaa',
      stalePods: 0,
      reportedAt: new Date(first.runtime.now).toISOString(),
    };
    const ops = new RecordingOps(first.runtime);
    ops.trust = { bundle: 'aaaaaaaaaaaa', stalePods: 0, at: before.reportedAt };
    const next = await run(rb({}, {}, { ...ready.status, trustRestart: before }), ops, {
      set: setOf('v-3', {}, 'NEW PEM'),
    });
    assert.ok(ops.calls.includes('readiness'));
    assert.deepEqual(next.outcome, { requeueAfterMs: 30_000 });
    const seen = new RecordingOps(first.runtime);
    seen.trust = { bundle: trustBundleHash('NEW PEM').slice(0, 12), stalePods: 3, at: before.reportedAt };
    const after = await run(rb({}, {}, next.status), seen, { set: setOf('v-3', {}, 'NEW PEM') });
    assert.equal(after.status.trustRestart?.stalePods, 3);
    assert.deepEqual(after.outcome, { requeueAfterMs: 30_000 }, 'Pods to restart: looked at again');
  });

  test('a forced resync re-applies everything', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    const ops = new RecordingOps(first.runtime);
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

describe("the runtime's ClusterTrustBundle API", () => {
  const noneServed: TrustBundleApi = {
    served: false,
    found:
      'discovery found: certificates.k8s.io/v1 serves certificatesigningrequests but not clustertrustbundles; certificates.k8s.io/v1beta1 is not served',
  };

  test('served: the set goes whole, the status names the version', async () => {
    for (const version of ['v1', 'v1beta1'] as const) {
      const ops = new RecordingOps();
      ops.api = servedTrustBundleApi(version);
      const { status } = await run(rb(), ops);
      assert.ok(ops.calls.includes('apply:Namespace,ClusterTrustBundle,Secret,ConfigMap'));
      assert.equal(status.clusterTrustBundleAPI, `certificates.k8s.io/${version}`);
      assert.equal(cond(status, 'TrustBundleAPI')?.reason, 'Served');
      assert.equal(status.state, 'Ready');
    }
  });

  test('none served: the rest of the set goes, the condition says what discovery found, a look again later', async () => {
    const ops = new RecordingOps();
    ops.api = noneServed;
    const { status, outcome } = await run(rb(), ops);
    assert.ok(ops.calls.includes('apply:Namespace,Secret,ConfigMap'), ops.calls.join(' '));
    assert.equal(status.state, 'Ready', 'the webhook still serves the other features');
    assert.equal(status.appliedVersion, 'v-1');
    assert.equal(status.clusterTrustBundleAPI, undefined);
    const c = cond(status, 'TrustBundleAPI');
    assert.equal(c?.status, 'False');
    assert.equal(c.reason, 'NotServed');
    assert.match(c.message, /v1beta1 is not served.*not written there/);
    assert.ok((outcome.requeueAfterMs ?? Infinity) <= 10 * 60_000, 'looked at again within 10 minutes');

    // The next pass applies the set again, although its version is current; once served, whole.
    const again = new RecordingOps(ops.runtime);
    const next = await run(rb({}, {}, status), again);
    assert.ok(
      again.calls.includes('apply:Namespace,ClusterTrustBundle,Secret,ConfigMap'),
      again.calls.join(' '),
    );
    assert.equal(next.status.clusterTrustBundleAPI, 'certificates.k8s.io/v1');
    assert.equal(cond(next.status, 'TrustBundleAPI')?.status, 'True');
    // And the pass after that writes nothing.
    const rest = new RecordingOps(ops.runtime);
    await run(rb({}, {}, next.status), rest);
    assert.ok(!rest.calls.some((c) => c.startsWith('apply:Namespace')), rest.calls.join(' '));
  });

  test('a write that met an upgrade: the status names the version the bundle was written at', async () => {
    const ops = new RecordingOps();
    // The status's version first (v1beta1); the write found it gone and discovered v1.
    const answers = [servedTrustBundleApi('v1beta1'), servedTrustBundleApi('v1')];
    ops.trustBundleApi = () => Promise.resolve(answers.shift() ?? servedTrustBundleApi('v1'));
    const { status } = await run(rb(), ops);
    assert.equal(status.clusterTrustBundleAPI, 'certificates.k8s.io/v1');
  });

  test('a set without a bundle asks nothing and clears what an earlier set left', async () => {
    const first = await run(rb(), new RecordingOps());
    assert.ok(first.status.clusterTrustBundleAPI);
    const noBundle = buildSyncSet({
      version: 'v-3',
      configMap: {
        metadata: { name: 'c', namespace: 'kcp-system' },
        data: {
          'rt-bootstrapper-config.json': JSON.stringify({
            ...(JSON.parse(seedConfigText()) as Record<string, unknown>),
            clusterTrustBundle: null,
          }),
        },
      },
      pullSecret: { metadata: { name: 's', namespace: 'kcp-system' }, data: {} },
    });
    assert.ok(noBundle.ok);
    const ops = new RecordingOps();
    ops.trustBundleApi = () => Promise.reject(new Error('not asked without a bundle'));
    const { status } = await run(rb({}, {}, first.status), ops, { set: noBundle });
    assert.ok(ops.calls.includes('apply:Namespace,Secret,ConfigMap'));
    assert.equal(status.clusterTrustBundleAPI, undefined);
    assert.equal(cond(status, 'TrustBundleAPI'), undefined);
  });

  test('the set does not depend on any runtime: the same sources make the same objects', () => {
    const a = setOf('v-9');
    const b = setOf('v-9');
    assert.ok(a.ok && b.ok);
    assert.deepEqual(a.set.objects, b.set.objects);
    const ctb = a.set.objects.find((o) => o.kind === 'ClusterTrustBundle');
    assert.equal(ctb?.apiVersion, 'certificates.k8s.io/v1', 'each runtime writes it at its own version');
  });
});

describe("the runtime's admission policy", () => {
  const policyKinds = ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'];
  const paramsOf = (ops: RecordingOps): Record<string, string> | undefined => {
    const params = ops.appliedObjects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata?.name === 'rt-bootstrapper-pod-mutation',
    );
    return params === undefined ? undefined : (params as { data?: Record<string, string> }).data;
  };

  test('served: its parameters go with the set (stamped with it), policy and binding with the webhook; the status names the version', async () => {
    for (const version of ['v1', 'v1beta1'] as const) {
      const ops = new RecordingOps();
      ops.policyApi = {
        served: true,
        version,
        apiVersion: `admissionregistration.k8s.io/${version}`,
        path: '',
      };
      const { status } = await run(rb(), ops);
      assert.ok(
        ops.calls.includes('apply:Namespace,ClusterTrustBundle,Secret,ConfigMap,ConfigMap'),
        ops.calls.join(' '),
      );
      assert.equal(paramsOf(ops)?.revision, 'v-1', 'the parameters carry the set they came with');
      const policy = ops.appliedObjects.filter((o) => policyKinds.includes(o.kind ?? ''));
      assert.deepEqual(
        policy.map((o) => [o.kind, o.apiVersion]),
        policyKinds.map((k) => [k, `admissionregistration.k8s.io/${version}`]),
      );
      // Written as the webhook's ServiceAccount: after its rights, before its Pods roll.
      const kinds = ops.appliedObjects.map((o) => o.kind);
      const at = (kind: string): number => kinds.indexOf(kind);
      assert.ok(at('ClusterRoleBinding') < at('MutatingAdmissionPolicy'), kinds.join(','));
      assert.ok(at('MutatingAdmissionPolicyBinding') < at('Deployment'), kinds.join(','));
      assert.equal(status.admissionPolicyAPI, `admissionregistration.k8s.io/${version}`);
      assert.equal(cond(status, 'AdmissionPolicy')?.reason, 'Served');
    }
  });

  test('a new set: new parameters with it; the policy mounts the bundle only where the projection is kept', async () => {
    const served: AdmissionPolicyApi = {
      served: true,
      version: 'v1',
      apiVersion: 'admissionregistration.k8s.io/v1',
      path: '',
    };
    const first = new RecordingOps();
    first.policyApi = served;
    const ready = await run(rb(), first);
    assert.equal(paramsOf(first)?.trustBundleName, undefined, 'not reported yet: the webhook mounts it');
    const withProjection = (status: 'True' | 'False') => ({
      ...ready.status,
      conditions: [
        ...(ready.status.conditions ?? []),
        { type: 'TrustBundleProjection' as const, status, reason: 'x', message: '', lastTransitionTime: '' },
      ],
    });
    const kept = new RecordingOps(first.runtime);
    kept.policyApi = served;
    await run(rb({}, {}, withProjection('True')), kept, { set: set2 });
    assert.equal(paramsOf(kept)?.revision, 'v-2');
    assert.ok(paramsOf(kept)?.trustBundleName, 'kept: the policy mounts it');
    assert.equal(paramsOf(kept)?.trustBundleHash, trustBundleHash('PEM'));
    const dropped = new RecordingOps(first.runtime);
    dropped.policyApi = served;
    await run(rb({}, {}, withProjection('False')), dropped, { set: setOf('v-3') });
    assert.equal(paramsOf(dropped)?.trustBundleName, undefined, 'dropped: nothing mounted');
  });

  test('not served: the webhook alone, nothing of the policy written, the condition says what discovery found', async () => {
    const ops = new RecordingOps();
    const { status } = await run(rb(), ops);
    assert.equal(paramsOf(ops), undefined, 'no parameters');
    assert.ok(!ops.appliedObjects.some((o) => policyKinds.includes(o.kind ?? '')));
    assert.equal(status.admissionPolicyAPI, undefined);
    assert.equal(cond(status, 'AdmissionPolicy')?.reason, 'NotServed');
    assert.match(cond(status, 'AdmissionPolicy')?.message ?? '', /discovery found: none/);
  });

  test("a config the policy cannot carry: empty parameters replace the last set's, the webhook alone admits", async () => {
    const config = JSON.parse(seedConfigText()) as Record<string, unknown>;
    const overrides = Object.fromEntries(
      Array.from({ length: 65 }, (_, i) => [`r${i}.example.com`, 'mirror.example.com']),
    );
    const many = buildSyncSet(
      syncSources({
        version: 'v-3',
        configMap: {
          metadata: { name: 'c', namespace: 'kcp-system' },
          data: { 'rt-bootstrapper-config.json': JSON.stringify({ ...config, overrides }) },
        },
      }),
    );
    assert.ok(many.ok);
    const ops = new RecordingOps();
    ops.policyApi = { served: true, version: 'v1', apiVersion: 'admissionregistration.k8s.io/v1', path: '' };
    const { status } = await run(rb(), ops, { set: many });
    assert.deepEqual(paramsOf(ops), {});
    assert.equal(status.admissionPolicyAPI, undefined);
    assert.equal(cond(status, 'AdmissionPolicy')?.reason, 'ConfigNotCarried');
    assert.match(cond(status, 'AdmissionPolicy')?.message ?? '', /overrides/);
  });
});

describe("the runtime's spec: repairEscapedPods", () => {
  const argsOf = (ops: RecordingOps): string[] => {
    const d = ops.appliedObjects.find((o) => o.kind === 'Deployment') as
      { spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } } } | undefined;
    return d?.spec?.template?.spec?.containers?.[0]?.args ?? [];
  };

  test('turned on for an installed runtime: its webhook is installed again with --repair-escaped', async () => {
    const first = new RecordingOps();
    const ready = await run(rb(), first);
    assert.ok(!argsOf(first).includes('--repair-escaped'), 'off by default');
    // The spec changed: a new generation, not yet observed.
    const ops = new RecordingOps(first.runtime);
    await run(rb({ generation: 4 }, { repairEscapedPods: true }, ready.status), ops, {
      servingCurrentUntil: ready.servingCheckedUntil,
    });
    assert.ok(argsOf(ops).includes('--repair-escaped'), ops.calls.join(' '));
    // Observed: the next pass installs nothing.
    const rest = new RecordingOps(first.runtime);
    const again = await run(
      rb({ generation: 4 }, { repairEscapedPods: true }, { ...ready.status, observedGeneration: 4 }),
      rest,
      {
        servingCurrentUntil: ready.servingCheckedUntil,
      },
    );
    assert.equal(again.status.state, 'Ready');
    assert.ok(!rest.calls.some((c) => c.includes('Deployment')), rest.calls.join(' '));
  });
});
