import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { CTB_HASH_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import type { ControllerEvent } from '../../../../src/kube/event-recorder.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import type { OwnerRef, PodFacts } from '../../../../src/webhook/trust-restart/pod-facts.js';
import type { EvictionResult, RestartCalls } from '../../../../src/webhook/trust-restart/restart-calls.js';
import { createRestartMetrics } from '../../../../src/webhook/trust-restart/restart-metrics.js';
import { RestartPasses, type PassBundle } from '../../../../src/webhook/trust-restart/restart-pass.js';
import type { WorkloadRef } from '../../../../src/webhook/trust-restart/restart-plan.js';
import type { WorkloadObject } from '../../../../src/webhook/trust-restart/workload-decision.js';

const OLD = 'o'.repeat(64);
const NEW = 'n'.repeat(64);
const NEWER = 'w'.repeat(64);
const DEADLINE = 60_000;

/** An in-memory runtime: workloads whose rollouts complete only when the test says so. */
class World {
  readonly workloads = new Map<string, WorkloadObject>();
  pods: PodFacts[] = [];
  readonly patches: string[] = [];
  readonly evictions: string[] = [];
  readonly events: ControllerEvent[] = [];
  blockEvictions = 0;
  readonly calls: RestartCalls = {
    replicaSetOwner: (_ns, rs) => Promise.resolve({ deployment: rs.name.replace(/-rs$/, '') }),
    readWorkload: (w) => Promise.resolve(structuredClone(this.workloads.get(key(w)))),
    annotateTemplate: (w, hash) => {
      const obj = this.workloads.get(key(w))!;
      this.patches.push(`${w.name}=${hash[0]!}`);
      const annotations = { ...obj.spec?.template?.metadata?.annotations, [CTB_HASH_ANNOTATION]: hash };
      this.workloads.set(key(w), {
        ...obj,
        metadata: { ...obj.metadata, generation: (obj.metadata?.generation ?? 1) + 1 },
        spec: { ...obj.spec, template: { metadata: { annotations } } },
      });
      return Promise.resolve();
    },
    evict: (_ns, name): Promise<EvictionResult> => {
      if (this.blockEvictions > 0) {
        this.blockEvictions--;
        this.evictions.push(`${name}:blocked`);
        return Promise.resolve('blocked');
      }
      this.evictions.push(name);
      this.pods = this.pods.filter((p) => p.name !== name);
      return Promise.resolve('evicted');
    },
  };

  deployment(name: string, replicas = 3, over: Partial<WorkloadObject> = {}): void {
    this.workloads.set(`Deployment/team/${name}`, {
      metadata: { generation: 1, uid: `uid-${name}` },
      spec: { replicas, template: { metadata: {} } },
      status: { observedGeneration: 1, replicas, updatedReplicas: replicas, availableReplicas: replicas },
      ...over,
    });
    const rs: OwnerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${name}-rs`, uid: `rs-${name}` };
    for (let i = 0; i < replicas; i++) this.pods.push(pod(`${name}-${i}`, OLD, rs));
  }

  /** The deployment controller and kubelets finish the rollout: every Pod new, stamped `hash`. */
  complete(name: string, hash: string): void {
    const k = `Deployment/team/${name}`;
    const obj = this.workloads.get(k)!;
    const replicas = obj.spec?.replicas ?? 1;
    this.workloads.set(k, {
      ...obj,
      status: {
        observedGeneration: obj.metadata?.generation ?? 1,
        replicas,
        updatedReplicas: replicas,
        availableReplicas: replicas,
      },
    });
    const rs: OwnerRef = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: `${name}-rs`,
      uid: `rs-${name}-2`,
    };
    this.pods = this.pods.filter((p) => !p.name.startsWith(`${name}-`));
    for (let i = 0; i < replicas; i++) this.pods.push(pod(`${name}-${i}`, hash, rs));
  }

  passes(concurrency = 1): RestartPasses {
    return new RestartPasses({
      calls: this.calls,
      metrics: createRestartMetrics(new Registry()),
      events: { record: (e) => this.events.push(e), flush: () => Promise.resolve() },
      logger: silentLogger(),
      pacing: { concurrency, delayMs: 30_000, deadlineMs: DEADLINE },
    });
  }
}

const key = (w: WorkloadRef): string => `${w.kind}/${w.namespace}/${w.name}`;
function pod(
  name: string,
  hash: string | undefined,
  owner?: OwnerRef,
  over: Partial<PodFacts> = {},
): PodFacts {
  return {
    namespace: 'team',
    name,
    uid: `uid-${name}-${hash ?? ''}`,
    createdAtMs: 0,
    ...(hash ? { hash } : {}),
    optedOut: false,
    finished: false,
    ...(owner ? { owner } : {}),
    ...over,
  };
}
const bundle = (hash: string, notBeforeMs = 0): PassBundle => ({ hash, changedAtMs: 1000, notBeforeMs });

describe('restart passes', () => {
  test('one owner at a time, the next only once the previous rolled out; each patched once', async () => {
    const w = new World();
    for (const name of ['a', 'b', 'c']) w.deployment(name);
    const passes = w.passes();
    let now = 100_000;
    await passes.pass(bundle(NEW), w.pods, now);
    assert.deepEqual(w.patches, ['a=n']);
    for (let i = 0; i < 3; i++) await passes.pass(bundle(NEW), w.pods, (now += 1000));
    assert.deepEqual(w.patches, ['a=n'], 'b waits while a rolls');
    w.complete('a', NEW);
    await passes.pass(bundle(NEW), w.pods, (now += 1000));
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
    w.complete('b', NEW);
    await passes.pass(bundle(NEW), w.pods, (now += 1000));
    w.complete('c', NEW);
    for (let i = 0; i < 3; i++) await passes.pass(bundle(NEW), w.pods, (now += 1000));
    assert.deepEqual(w.patches, ['a=n', 'b=n', 'c=n']);
    assert.equal(w.events.length, 3);
    assert.ok(w.events.every((e) => e.reason === 'TrustBundleChanged' && !e.note.includes(NEW)));
  });

  test('a new leader adopts the rollout under way and patches nothing twice', async () => {
    const w = new World();
    for (const name of ['a', 'b']) w.deployment(name);
    await w.passes().pass(bundle(NEW), w.pods, 100_000);
    assert.deepEqual(w.patches, ['a=n']);
    const next = w.passes(); // the old leader is gone; its state with it
    await next.pass(bundle(NEW), w.pods, 101_000);
    await next.pass(bundle(NEW), w.pods, 102_000);
    assert.deepEqual(w.patches, ['a=n'], 'a is waited for, b waits');
    assert.deepEqual(next.underWay(), ['Deployment/team/a']);
    w.complete('a', NEW);
    await next.pass(bundle(NEW), w.pods, 103_000);
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
  });

  test('a rollout past its deadline is reported and the next goes on; it is never patched again', async () => {
    const w = new World();
    for (const name of ['a', 'b']) w.deployment(name);
    const passes = w.passes();
    await passes.pass(bundle(NEW), w.pods, 100_000);
    await passes.pass(bundle(NEW), w.pods, 100_000 + DEADLINE);
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
    w.complete('b', NEW);
    for (let i = 1; i < 4; i++) await passes.pass(bundle(NEW), w.pods, 100_000 + DEADLINE + i * 1000);
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
  });

  test('nothing before the delay; two quick changes patch each owner once, with the last bundle', async () => {
    const w = new World();
    w.deployment('a');
    const passes = w.passes();
    await passes.pass(bundle(NEW, 130_000), w.pods, 100_000);
    assert.deepEqual(w.patches, []);
    await passes.pass(bundle(NEWER, 160_000), w.pods, 131_000);
    assert.deepEqual(w.patches, []);
    await passes.pass(bundle(NEWER, 160_000), w.pods, 160_000);
    w.complete('a', NEWER);
    for (let i = 1; i < 4; i++) await passes.pass(bundle(NEWER, 160_000), w.pods, 160_000 + i * 1000);
    assert.deepEqual(w.patches, ['a=w']);
  });

  test('a change during a rollout: the rollout is waited for, then the owner is patched once more', async () => {
    const w = new World();
    w.deployment('a');
    w.deployment('b');
    const passes = w.passes();
    await passes.pass(bundle(NEW), w.pods, 100_000);
    await passes.pass(bundle(NEWER), w.pods, 101_000);
    assert.deepEqual(w.patches, ['a=n']);
    w.complete('a', NEW);
    await passes.pass(bundle(NEWER), w.pods, 102_000);
    assert.deepEqual(w.patches, ['a=n', 'b=w'], 'a just finished: b goes first');
    await passes.pass(bundle(NEWER), w.pods, 103_000);
    w.complete('b', NEWER);
    await passes.pass(bundle(NEWER), w.pods, 104_000);
    w.complete('a', NEWER);
    for (let i = 5; i < 8; i++) await passes.pass(bundle(NEWER), w.pods, 100_000 + i * 1000);
    assert.deepEqual(w.patches, ['a=n', 'b=w', 'a=w']);
  });

  test('opted-out owners, current and bare Pods are never touched', async () => {
    const w = new World();
    w.deployment('quiet', 2, {
      metadata: {
        generation: 1,
        annotations: { 'rt-bootstrapper.kyma-project.io/restart-on-trust-change': 'false' },
      },
    });
    w.pods.push(
      pod('bare', OLD),
      pod('fresh', NEW, { apiVersion: 'batch/v1', kind: 'Job', name: 'j', uid: 'j' }),
    );
    const passes = w.passes(2);
    for (let i = 0; i < 3; i++) {
      const plan = await passes.pass(bundle(NEW), w.pods, 100_000 + i * 1000);
      assert.deepEqual(
        plan.bare.map((p) => p.name),
        ['bare'],
      );
    }
    assert.deepEqual(w.patches, []);
    assert.deepEqual(w.evictions, []);
  });

  test('Pods of other owners are evicted one at a time; a PodDisruptionBudget refusal is retried with backoff', async () => {
    const w = new World();
    const job: OwnerRef = { apiVersion: 'batch/v1', kind: 'Job', name: 'j', uid: 'j' };
    w.pods.push(pod('j-1', OLD, job), pod('j-2', OLD, job));
    w.blockEvictions = 1;
    const passes = w.passes();
    let now = 100_000;
    await passes.pass(bundle(NEW), w.pods, now);
    assert.deepEqual(w.evictions, ['j-1:blocked']);
    await passes.pass(bundle(NEW), w.pods, (now += 1000));
    assert.deepEqual(w.evictions, ['j-1:blocked'], 'not before the backoff, and j-2 waits');
    await passes.pass(bundle(NEW), w.pods, (now += 60_000 - 1000 - 1));
    assert.deepEqual(w.evictions, ['j-1:blocked', 'j-1']);
    await passes.pass(bundle(NEW), w.pods, (now += 1000));
    assert.deepEqual(w.evictions, ['j-1:blocked', 'j-1', 'j-2']);
  });
});
