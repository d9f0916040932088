import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { CTB_HASH_ANNOTATION, RESTART_OPT_OUT_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import { ItemExponentialBackoff } from '../../../../src/kube/backoff.js';
import { KubeApiError } from '../../../../src/kube/kube-errors.js';
import type { ControllerEvent } from '../../../../src/kube/event-recorder.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import type { OwnerRef, PodFacts } from '../../../../src/runtime-agent/trust-restart/pod-facts.js';
import type {
  EvictionResult,
  RestartCalls,
} from '../../../../src/runtime-agent/trust-restart/restart-calls.js';
import { createRestartMetrics } from '../../../../src/runtime-agent/trust-restart/restart-metrics.js';
import type {
  RestartPlan,
  RestartScope,
  WorkloadRef,
} from '../../../../src/runtime-agent/trust-restart/restart-plan.js';
import { RestartWork, type PassBundle } from '../../../../src/runtime-agent/trust-restart/restart-work.js';
import type { WorkloadObject } from '../../../../src/runtime-agent/trust-restart/workload-decision.js';
import { pluck } from '../../../support/pluck.js';

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
  /** Workloads whose template patch is refused (403, as RBAC or the write policy refuses). */
  readonly forbidden = new Set<string>();
  readonly replicaSetReads: string[] = [];
  readonly calls: RestartCalls = {
    replicaSetOwner: (ns, rs) => {
      this.replicaSetReads.push(`${ns}/${rs.name}`);
      return Promise.resolve({ deployment: rs.name.replace(/-rs$/, '') });
    },
    readWorkload: (w) => {
      this.reads++;
      return Promise.resolve(structuredClone(this.workloads.get(key(w))));
    },
    annotateTemplate: (w, hash) => {
      if (this.forbidden.has(w.name))
        return Promise.reject(new KubeApiError('forbidden', { statusCode: 403, reason: 'Forbidden' }));
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
    labelPod: () => Promise.resolve(),
  };
  reads = 0;

  deployment(name: string, replicas = 3, over: Partial<WorkloadObject> = {}, namespace = 'team'): void {
    this.workloads.set(`Deployment/${namespace}/${name}`, {
      metadata: { generation: 1, uid: `uid-${name}` },
      spec: { replicas, template: { metadata: {} } },
      status: { observedGeneration: 1, replicas, updatedReplicas: replicas, availableReplicas: replicas },
      ...over,
    });
    const rs: OwnerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${name}-rs`, uid: `rs-${name}` };
    for (let i = 0; i < replicas; i++) this.pods.push(pod(`${name}-${i}`, OLD, rs, { namespace }));
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

  /** A new leadership term's work over this world, run by a {@link Driver}. */
  driver(concurrency = 1, mayRestart?: RestartScope): Driver {
    const work = new RestartWork(
      {
        calls: this.calls,
        metrics: createRestartMetrics(new Registry()),
        events: { record: (e) => this.events.push(e), flush: () => Promise.resolve() },
        logger: silentLogger(),
        pacing: { concurrency, delayMs: 30_000, deadlineMs: DEADLINE },
        pollMs: 1_000,
        mayRestart,
      },
      (namespace, name) => this.pods.find((p) => p.namespace === namespace && p.name === name),
    );
    return new Driver(this, work);
  }
}

/**
 * The work queue at a clock the test moves: a tick plans, then runs every key due (admitted,
 * looked at again, retried after the queue's backoff), planning again whenever a run asks.
 */
class Driver {
  private readonly due = new Map<string, number>();
  private readonly backoff = new ItemExponentialBackoff<string>({ baseMs: 5_000, maxMs: 60_000 });

  constructor(
    private readonly w: World,
    readonly work: RestartWork,
  ) {}

  async tick(b: PassBundle, now: number): Promise<RestartPlan> {
    let out = await this.work.plan(b, this.w.pods, now);
    const queue = [...out.run];
    for (const [k, at] of this.due)
      if (at <= now) {
        queue.push(k);
        this.due.delete(k);
      }
    for (let i = 0; i < 100; i++) {
      const k = queue.shift();
      if (k === undefined) break;
      const r = await this.work.run(k, now);
      queue.push(...(r.run ?? []));
      if (r.retry === true) this.due.set(k, now + this.backoff.when(k));
      else {
        this.backoff.forget(k);
        if (r.lookAfterMs !== undefined) this.due.set(k, now + r.lookAfterMs);
      }
      if (r.replan === true) {
        out = await this.work.plan(b, this.w.pods, now);
        queue.push(...out.run);
      }
    }
    return out.plan;
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

describe('the restarter’s work', () => {
  test('one owner at a time, the next only once the previous rolled out; each patched once', async () => {
    const w = new World();
    for (const name of ['a', 'b', 'c']) w.deployment(name);
    const d = w.driver();
    let now = 100_000;
    await d.tick(bundle(NEW), now);
    assert.deepEqual(w.patches, ['a=n']);
    for (let i = 0; i < 3; i++) await d.tick(bundle(NEW), (now += 1000));
    assert.deepEqual(w.patches, ['a=n'], 'b waits while a rolls');
    w.complete('a', NEW);
    await d.tick(bundle(NEW), (now += 1000));
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
    w.complete('b', NEW);
    await d.tick(bundle(NEW), (now += 1000));
    w.complete('c', NEW);
    for (let i = 0; i < 3; i++) await d.tick(bundle(NEW), (now += 1000));
    assert.deepEqual(w.patches, ['a=n', 'b=n', 'c=n']);
    assert.equal(w.events.length, 3);
    assert.ok(w.events.every((e) => e.reason === 'TrustBundleChanged' && !e.note.includes(NEW)));
    // One read when first seen (it decides the restart), then one per look while it rolls.
    assert.equal(w.reads, 3 + 4 + 1 + 1);
  });

  test('a new leader adopts the rollout under way and patches nothing twice', async () => {
    const w = new World();
    for (const name of ['a', 'b']) w.deployment(name);
    await w.driver().tick(bundle(NEW), 100_000);
    assert.deepEqual(w.patches, ['a=n']);
    const next = w.driver(); // the old leader is gone; its state with it
    await next.tick(bundle(NEW), 101_000);
    await next.tick(bundle(NEW), 102_000);
    assert.deepEqual(w.patches, ['a=n'], 'a is waited for, b waits');
    assert.deepEqual(next.work.underWay(), ['Deployment/team/a']);
    w.complete('a', NEW);
    await next.tick(bundle(NEW), 103_000);
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
  });

  test('a rollout past its deadline is reported and the next goes on; it is never patched again', async () => {
    const w = new World();
    for (const name of ['a', 'b']) w.deployment(name);
    const d = w.driver();
    await d.tick(bundle(NEW), 100_000);
    await d.tick(bundle(NEW), 100_000 + DEADLINE);
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
    w.complete('b', NEW);
    for (let i = 1; i < 4; i++) await d.tick(bundle(NEW), 100_000 + DEADLINE + i * 1000);
    assert.deepEqual(w.patches, ['a=n', 'b=n']);
  });

  test('nothing before the delay; two quick changes patch each owner once, with the last bundle', async () => {
    const w = new World();
    w.deployment('a');
    const d = w.driver();
    const first = await d.work.plan(bundle(NEW, 130_000), w.pods, 100_000);
    assert.equal(first.replanAfterMs, 30_000, 'planned again when the delay ends');
    await d.tick(bundle(NEW, 130_000), 100_000);
    assert.deepEqual(w.patches, []);
    await d.tick(bundle(NEWER, 160_000), 131_000);
    assert.deepEqual(w.patches, []);
    await d.tick(bundle(NEWER, 160_000), 160_000);
    w.complete('a', NEWER);
    for (let i = 1; i < 4; i++) await d.tick(bundle(NEWER, 160_000), 160_000 + i * 1000);
    assert.deepEqual(w.patches, ['a=w']);
  });

  test('a change during a rollout: the rollout is waited for, then the owner is patched once more', async () => {
    const w = new World();
    w.deployment('a');
    w.deployment('b');
    const d = w.driver();
    await d.tick(bundle(NEW), 100_000);
    await d.tick(bundle(NEWER), 101_000);
    assert.deepEqual(w.patches, ['a=n'], 'a rolls: nothing else starts');
    w.complete('a', NEW);
    await d.tick(bundle(NEWER), 102_000);
    assert.deepEqual(
      w.patches,
      ['a=n', 'a=w'],
      'a’s new Pods run NEW: it is patched once more, first in order',
    );
    w.complete('a', NEWER);
    await d.tick(bundle(NEWER), 103_000);
    w.complete('b', NEWER);
    for (let i = 4; i < 8; i++) await d.tick(bundle(NEWER), 100_000 + i * 1000);
    assert.deepEqual(w.patches, ['a=n', 'a=w', 'b=w']);
  });

  test('a completed rollout whose old Pods the cache still shows is not restarted again', async () => {
    const w = new World();
    w.deployment('a');
    const d = w.driver();
    await d.tick(bundle(NEW), 100_000);
    // The rollout completed, but the cache has not seen the old Pods go yet.
    const old = w.pods;
    w.complete('a', NEW);
    const fresh = w.pods;
    w.pods = old;
    for (let i = 1; i < 4; i++) await d.tick(bundle(NEW), 100_000 + i * 1000);
    assert.deepEqual(d.work.underWay(), []);
    assert.equal(w.reads, 2, 'read to start and to see it complete; not again while the cache catches up');
    w.pods = fresh;
    for (let i = 4; i < 6; i++) await d.tick(bundle(NEW), 100_000 + i * 1000);
    assert.deepEqual(w.patches, ['a=n']);
    assert.equal(w.events.length, 1);
  });

  test('opted-out Pods and owners are counted apart from the stale ones and never touched', async () => {
    const w = new World();
    w.deployment('quiet', 2, {
      metadata: { generation: 1, annotations: { [RESTART_OPT_OUT_ANNOTATION]: 'false' } },
    });
    const job: OwnerRef = { apiVersion: 'batch/v1', kind: 'Job', name: 'j', uid: 'j' };
    w.pods.push(pod('bare', OLD), pod('fresh', NEW, job), pod('reloads', OLD, job, { optedOut: true }));
    const d = w.driver(2);
    for (let i = 0; i < 3; i++) {
      const plan = await d.tick(bundle(NEW), 100_000 + i * 1000);
      assert.deepEqual(pluck(plan.bare, 'name'), ['bare']);
      assert.deepEqual(
        pluck(plan.optedOut, 'name'),
        ['quiet-0', 'quiet-1', 'reloads'],
        'the owner’s opt-out is known from its first read',
      );
      assert.equal(plan.stalePods, 1, 'only the bare Pod runs an older bundle without having chosen to');
      assert.deepEqual([...plan.staleByNamespace], [['team', 1]]);
      assert.deepEqual(plan.targets, []);
    }
    assert.deepEqual(w.patches, []);
    assert.deepEqual(w.evictions, []);
    assert.equal(w.reads, 1, 'the opted-out owner is read once for this bundle');
  });

  test('with restart rights in some namespaces only, Pods elsewhere are counted, never read, patched or evicted', async () => {
    const w = new World();
    w.deployment('here', 2);
    w.deployment('there', 2, {}, 'elsewhere');
    const job: OwnerRef = { apiVersion: 'batch/v1', kind: 'Job', name: 'j', uid: 'j' };
    w.pods.push(pod('job-pod', OLD, job, { namespace: 'elsewhere' }));
    const d = w.driver(2, (ns) => ns === 'team');
    let now = 100_000;
    for (let i = 0; i < 3; i++) {
      const plan = await d.tick(bundle(NEW), (now += 1000));
      assert.deepEqual(
        plan.withoutRights.map((p) => `${p.namespace}/${p.name}`),
        ['elsewhere/job-pod', 'elsewhere/there-0', 'elsewhere/there-1'],
      );
      assert.deepEqual(pluck(plan.targets, 'key'), ['Deployment/team/here']);
    }
    const plan = await d.tick(bundle(NEW), (now += 1000));
    assert.equal(plan.stalePods, 5, 'all of them still run an older bundle');
    assert.deepEqual([...plan.staleByNamespace].sort(), [
      ['elsewhere', 3],
      ['team', 2],
    ]);
    assert.deepEqual(w.patches, ['here=n']);
    assert.deepEqual(w.evictions, []);
    assert.deepEqual(w.replicaSetReads, ['team/here-rs'], 'no read where the restarter has no rights');
  });

  test('a refused restart (403) is left alone for the bundle, not retried, and the next one goes on', async () => {
    const w = new World();
    for (const name of ['a', 'b']) w.deployment(name);
    w.forbidden.add('a');
    const d = w.driver();
    let now = 100_000;
    for (let i = 0; i < 5; i++) await d.tick(bundle(NEW), (now += 1000));
    assert.deepEqual(w.patches, ['b=n'], 'a was refused once, then b went on');
    w.complete('b', NEW);
    for (let i = 0; i < 5; i++) await d.tick(bundle(NEW), (now += 60_000));
    assert.deepEqual(w.patches, ['b=n']);
    // A new bundle judges it anew.
    w.forbidden.delete('a');
    await d.tick(bundle(NEWER), (now += 1000));
    assert.deepEqual(w.patches, ['b=n', 'a=w']);
  });

  test('Pods of other owners are evicted one at a time; a PodDisruptionBudget refusal is retried with backoff', async () => {
    const w = new World();
    const job: OwnerRef = { apiVersion: 'batch/v1', kind: 'Job', name: 'j', uid: 'j' };
    w.pods.push(pod('j-1', OLD, job), pod('j-2', OLD, job));
    w.blockEvictions = 1;
    const d = w.driver();
    let now = 100_000;
    await d.tick(bundle(NEW), now);
    assert.deepEqual(w.evictions, ['j-1:blocked']);
    await d.tick(bundle(NEW), (now += 1000));
    assert.deepEqual(w.evictions, ['j-1:blocked'], 'not before the backoff, and j-2 waits');
    await d.tick(bundle(NEW), (now += 4000));
    assert.deepEqual(w.evictions, ['j-1:blocked', 'j-1']);
    await d.tick(bundle(NEW), (now += 1000));
    assert.deepEqual(w.evictions, ['j-1:blocked', 'j-1', 'j-2']);
  });

  test('a change of a Pod under way names its restart; an eviction’s only once the Pod went', async () => {
    const w = new World();
    w.deployment('a');
    const job: OwnerRef = { apiVersion: 'batch/v1', kind: 'Job', name: 'j', uid: 'j' };
    w.pods.push(pod('j-1', OLD, job));
    w.blockEvictions = 1;
    const d = w.driver(2);
    await d.tick(bundle(NEW), 100_000);
    const [a0, j1] = [w.pods.find((p) => p.name === 'a-0')!, w.pods.find((p) => p.name === 'j-1')!];
    assert.deepEqual(d.work.keysFor(a0, false), ['Deployment/team/a']);
    assert.deepEqual(d.work.keysFor(j1, false), [], 'a refused eviction waits for its backoff');
    assert.deepEqual(d.work.keysFor(j1, true), ['Pod/team/j-1']);
  });
});
