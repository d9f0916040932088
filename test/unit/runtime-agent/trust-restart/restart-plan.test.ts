import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CTB_HASH_ANNOTATION, RESTART_OPT_OUT_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import {
  podFactsOf,
  slimPod,
  type OwnerRef,
  type PodFacts,
} from '../../../../src/runtime-agent/trust-restart/pod-facts.js';
import {
  planRestarts,
  podVerdict,
  replicaSetsToResolve,
  restartKeyOf,
  type BundleFacts,
  type ReplicaSetOwner,
} from '../../../../src/runtime-agent/trust-restart/restart-plan.js';
import { pluck } from '../../../support/pluck.js';

const NEW = 'a'.repeat(64);
const OLD = 'b'.repeat(64);
const CHANGED = Date.parse('2026-06-01T12:00:00Z');
const bundle: BundleFacts = { hash: NEW, changedAtMs: CHANGED };

const owner = (kind: string, name: string, apiVersion = 'apps/v1'): OwnerRef => ({
  apiVersion,
  kind,
  name,
  uid: `uid-${kind}-${name}`,
});
const pod = (name: string, over: Partial<PodFacts> = {}): PodFacts => ({
  namespace: 'team',
  name,
  uid: `uid-${name}`,
  createdAtMs: CHANGED - 60_000,
  hash: OLD,
  optedOut: false,
  finished: false,
  ...over,
});

describe('podVerdict: every combination of stamp, creation time, opt-out and phase', () => {
  const stamps = [NEW, OLD, undefined] as const;
  const created = [CHANGED - 1000, CHANGED, CHANGED + 1000];
  for (const hash of stamps)
    for (const createdAtMs of created)
      for (const optedOut of [false, true])
        for (const finished of [false, true]) {
          const { hash: _old, ...unstamped } = pod('p', { createdAtMs, optedOut, finished });
          const p: PodFacts = hash === undefined ? unstamped : { ...unstamped, hash };
          const current = hash !== undefined ? hash === NEW : createdAtMs > CHANGED;
          const want = finished ? 'finished' : current ? 'current' : optedOut ? 'opted-out' : 'stale';
          test(`stamp ${hash?.slice(0, 1) ?? 'none'}, created ${createdAtMs - CHANGED} ms after the change, opted out ${optedOut}, finished ${finished}: ${want}`, () => {
            assert.equal(podVerdict(p, bundle), want);
          });
        }

  test('within the lag after the change, a new Pod may have the old content: stale even if stamped new', () => {
    const lagged: BundleFacts = { ...bundle, lagMs: 300_000 };
    const at = (createdAtMs: number, hash?: string): PodFacts => {
      const { hash: _old, ...p } = pod('p', { createdAtMs });
      return hash === undefined ? p : { ...p, hash };
    };
    assert.equal(podVerdict(at(CHANGED + 1000, NEW), lagged), 'stale', 'stamped new inside the window');
    assert.equal(podVerdict(at(CHANGED + 300_000, NEW), lagged), 'stale', 'at the window’s end');
    assert.equal(podVerdict(at(CHANGED + 301_000, NEW), lagged), 'current');
    assert.equal(
      podVerdict(at(CHANGED - 1000, NEW), lagged),
      'current',
      'before the change: the content it was stamped with',
    );
    assert.equal(podVerdict(at(CHANGED + 1000), lagged), 'stale', 'unstamped inside the window');
    assert.equal(podVerdict(at(CHANGED + 301_000), lagged), 'current');
    assert.equal(podVerdict(at(CHANGED + 301_000, OLD), lagged), 'stale');
  });

  test('an unknown change time makes every unstamped Pod stale', () => {
    const { hash: _old, ...p } = pod('p', { createdAtMs: Date.now() });
    assert.equal(podVerdict(p, { hash: NEW, changedAtMs: Number.NaN }), 'stale');
  });
});

describe('planRestarts', () => {
  const rsA = owner('ReplicaSet', 'web-abc');
  const known = new Map<string, ReplicaSetOwner>([
    [`team/${rsA.uid}`, { deployment: 'web' }],
    [`team/${owner('ReplicaSet', 'lonely').uid}`, null],
  ]);

  test('groups stale Pods by the owner that restarts them', () => {
    const pods = [
      pod('web-1', { owner: rsA }),
      pod('web-2', { owner: rsA }),
      pod('web-3', { owner: rsA, hash: NEW }),
      pod('db-0', { owner: owner('StatefulSet', 'db') }),
      pod('agent-x', { owner: owner('DaemonSet', 'agent') }),
      pod('job-1', { owner: owner('Job', 'once', 'batch/v1') }),
      pod('cr-1', { owner: owner('Thing', 'x', 'example.com/v1') }),
      pod('rs-1', { owner: owner('ReplicaSet', 'lonely') }),
      pod('bare'),
      pod('quiet', { owner: rsA, optedOut: true }),
      pod('done', { owner: owner('Job', 'once', 'batch/v1'), finished: true }),
      pod('unknown-rs', { owner: owner('ReplicaSet', 'other') }),
      pod('sts-other-group', { owner: owner('StatefulSet', 'x', 'example.com/v1') }),
    ];
    const plan = planRestarts(bundle, pods, known);
    assert.deepEqual(
      plan.targets.map((t) => [t.key, t.kind === 'workload' ? t.pods.map((p) => p.name) : [t.pod.name]]),
      [
        ['DaemonSet/team/agent', ['agent-x']],
        ['Deployment/team/web', ['web-1', 'web-2']],
        ['Pod/team/cr-1', ['cr-1']],
        ['Pod/team/job-1', ['job-1']],
        ['Pod/team/rs-1', ['rs-1']],
        ['Pod/team/sts-other-group', ['sts-other-group']],
        ['StatefulSet/team/db', ['db-0']],
      ],
    );
    assert.deepEqual(pluck(plan.bare, 'name'), ['bare']);
    assert.deepEqual(pluck(plan.optedOut, 'name'), ['quiet']);
    assert.deepEqual(pluck(plan.unresolved, 'name'), ['unknown-rs']);
    assert.deepEqual([...plan.staleByNamespace], [['team', 10]]);
    assert.equal(plan.stalePods, 10, 'the opted-out Pod is not stale: it reloads the file itself');
    const owners = planRestarts(bundle, pods, known, new Set(['Deployment/team/web']));
    assert.deepEqual(
      pluck(owners.optedOut, 'name'),
      ['quiet', 'web-1', 'web-2'],
      'an owner opted out on its own metadata: its Pods count as opted out',
    );
    assert.equal(owners.stalePods, 8);
    assert.ok(!owners.targets.some((t) => t.key === 'Deployment/team/web'));
  });

  test('nothing stale, nothing planned; namespaces counted apart', () => {
    assert.deepEqual(planRestarts(bundle, [pod('a', { hash: NEW })], known).targets, []);
    const plan = planRestarts(bundle, [pod('a'), pod('b', { namespace: 'other' }), pod('c')], known);
    assert.deepEqual([...plan.staleByNamespace].sort(), [
      ['other', 1],
      ['team', 2],
    ]);
  });

  test('in order: namespace, then kind, then name; each list by namespace and name', () => {
    const pods = [
      pod('z-1', { namespace: 'b', owner: owner('StatefulSet', 'z') }),
      pod('y-1', { namespace: 'b', owner: owner('Job', 'y', 'batch/v1') }),
      pod('x-1', { namespace: 'a', owner: owner('StatefulSet', 'x') }),
      pod('c-0', { namespace: 'b', owner: owner('DaemonSet', 'c') }),
      pod('w-2', { namespace: 'a', owner: owner('StatefulSet', 'w') }),
      pod('w-1', { namespace: 'a', owner: owner('StatefulSet', 'w') }),
      pod('bare-2', { namespace: 'b' }),
      pod('bare-1', { namespace: 'b' }),
      pod('bare-3', { namespace: 'a' }),
      pod('quiet-2', { optedOut: true }),
      pod('quiet-1', { optedOut: true }),
      pod('rs-2', { owner: owner('ReplicaSet', 'unknown') }),
      pod('rs-1', { owner: owner('ReplicaSet', 'unknown') }),
    ];
    const plan = planRestarts(bundle, pods, new Map());
    assert.deepEqual(pluck(plan.targets, 'key'), [
      'StatefulSet/a/w',
      'StatefulSet/a/x',
      'DaemonSet/b/c',
      'Pod/b/y-1',
      'StatefulSet/b/z',
    ]);
    const w = plan.targets[0];
    assert.ok(w?.kind === 'workload');
    assert.deepEqual(pluck(w.pods, 'name'), ['w-1', 'w-2']);
    assert.deepEqual(
      plan.bare.map((p) => `${p.namespace}/${p.name}`),
      ['a/bare-3', 'b/bare-1', 'b/bare-2'],
    );
    assert.deepEqual(pluck(plan.optedOut, 'name'), ['quiet-1', 'quiet-2']);
    assert.deepEqual(pluck(plan.unresolved, 'name'), ['rs-1', 'rs-2']);
    assert.equal(plan.stalePods, 11);
  });

  test('outside the restart rights: counted stale, never planned, their ReplicaSets never read', () => {
    const mine = (namespace: string) => namespace === 'team';
    const pods = [
      pod('web-1', { owner: rsA }),
      pod('theirs-2', { namespace: 'other', owner: owner('ReplicaSet', 'x') }),
      pod('theirs-1', { namespace: 'other', owner: owner('StatefulSet', 'db') }),
      pod('theirs-bare', { namespace: 'other' }),
      pod('theirs-current', { namespace: 'other', hash: NEW }),
      pod('theirs-quiet', { namespace: 'other', optedOut: true }),
    ];
    const plan = planRestarts(bundle, pods, known, new Set(), mine);
    assert.deepEqual(pluck(plan.targets, 'key'), ['Deployment/team/web']);
    assert.deepEqual(pluck(plan.withoutRights, 'name'), ['theirs-1', 'theirs-2', 'theirs-bare']);
    assert.deepEqual(plan.bare, []);
    assert.deepEqual(plan.unresolved, []);
    assert.deepEqual(pluck(plan.optedOut, 'name'), ['theirs-quiet']);
    assert.deepEqual([...plan.staleByNamespace].sort(), [
      ['other', 3],
      ['team', 1],
    ]);
    assert.equal(plan.stalePods, 4);
    assert.deepEqual(planRestarts(bundle, pods, known).withoutRights, [], 'everywhere by default');
    const rsOther = owner('ReplicaSet', 'other-rs');
    const stale = [pod('1', { owner: rsOther }), pod('2', { namespace: 'other', owner: rsOther })];
    assert.deepEqual(replicaSetsToResolve(stale, bundle, known, mine), [
      { namespace: 'team', owner: rsOther },
    ]);
    assert.equal(replicaSetsToResolve(stale, bundle, known).length, 2, 'everywhere by default');
  });

  test('what restarts a Pod: its workload’s key, its own eviction’s, or nothing yet', () => {
    assert.equal(restartKeyOf(pod('web-1', { owner: rsA }), known), 'Deployment/team/web');
    assert.equal(
      restartKeyOf(pod('db-0', { owner: owner('StatefulSet', 'db') }), known),
      'StatefulSet/team/db',
    );
    assert.equal(restartKeyOf(pod('rs-1', { owner: owner('ReplicaSet', 'lonely') }), known), 'Pod/team/rs-1');
    assert.equal(restartKeyOf(pod('j', { owner: owner('Job', 'once', 'batch/v1') }), known), 'Pod/team/j');
    assert.equal(
      restartKeyOf(pod('old-rs', { owner: owner('ReplicaSet', 'web-abc', 'extensions/v1beta1') }), known),
      'Pod/team/old-rs',
      'a ReplicaSet of another group is evicted',
    );
    assert.equal(restartKeyOf(pod('u', { owner: owner('ReplicaSet', 'unknown') }), known), undefined);
    assert.equal(restartKeyOf(pod('bare'), known), undefined);
  });

  test('only the ReplicaSets of stale Pods are resolved, each once', () => {
    const rsB = owner('ReplicaSet', 'b');
    const wanted = replicaSetsToResolve(
      [
        pod('1', { owner: rsA }),
        pod('2', { owner: rsB }),
        pod('3', { owner: rsB }),
        pod('4', { owner: owner('ReplicaSet', 'current'), hash: NEW }),
        pod('5', { owner: owner('ReplicaSet', 'quiet'), optedOut: true }),
        pod('6'),
        pod('7', { owner: owner('StatefulSet', 'db') }),
        pod('8', { owner: owner('Deployment', 'odd') }),
        pod('9', { owner: owner('ReplicaSet', 'old', 'extensions/v1beta1') }),
      ],
      bundle,
      known,
    );
    assert.deepEqual(wanted, [{ namespace: 'team', owner: rsB }], 'only apps/v1 ReplicaSets are read');
  });
});

describe('the cached Pod', () => {
  test('a Pod with little on it: nothing invented', () => {
    // Absent fields are left undefined: the cache reads them field by field.
    const none = {
      name: undefined,
      namespace: undefined,
      uid: undefined,
      resourceVersion: undefined,
      creationTimestamp: undefined,
      deletionTimestamp: undefined,
      annotations: undefined,
      ownerReferences: undefined,
    };
    assert.deepEqual(slimPod({}), { metadata: none });
    const other = slimPod({
      metadata: {
        name: 'p',
        deletionTimestamp: '2026-06-01T12:00:00Z',
        annotations: { unrelated: 'x' },
        ownerReferences: [owner('ReplicaSet', 'not-controller')],
      },
    });
    assert.deepEqual(other, { metadata: { ...none, name: 'p', deletionTimestamp: '2026-06-01T12:00:00Z' } });
    const facts = podFactsOf({});
    assert.deepEqual(
      { ...facts, createdAtMs: String(facts.createdAtMs) },
      {
        namespace: '',
        name: '',
        uid: '',
        createdAtMs: 'NaN',
        hash: undefined,
        optedOut: false,
        finished: false,
        owner: undefined,
      },
    );
    assert.equal(
      podFactsOf({ metadata: { annotations: { [RESTART_OPT_OUT_ANNOTATION]: 'true' } } }).optedOut,
      false,
    );
    assert.equal(podFactsOf({ metadata: { ownerReferences: [owner('ReplicaSet', 'x')] } }).owner, undefined);
  });

  test('keeps only what the planner reads', () => {
    const identity = {
      name: 'p',
      namespace: 'team',
      uid: 'u',
      resourceVersion: '7',
      creationTimestamp: '2026-06-01T12:00:00Z',
    };
    const slim = slimPod({
      metadata: {
        ...identity,
        annotations: {
          [CTB_HASH_ANNOTATION]: OLD,
          [RESTART_OPT_OUT_ANNOTATION]: 'false',
          big: 'x'.repeat(1000),
        },
        ownerReferences: [
          { ...owner('Thing', 'not-controller', 'example.com/v1') },
          { ...owner('ReplicaSet', 'web'), controller: true },
        ],
        // A full Pod's other fields are dropped.
        ...({ labels: { a: 'b' }, managedFields: [{}] } as object),
      },
      status: { phase: 'Running', ...({ conditions: [{}] } as object) },
      ...({ spec: { containers: [] } } as object),
    });
    assert.deepEqual(slim, {
      metadata: {
        ...identity,
        deletionTimestamp: undefined,
        annotations: { [CTB_HASH_ANNOTATION]: OLD, [RESTART_OPT_OUT_ANNOTATION]: 'false' },
        ownerReferences: [{ ...owner('ReplicaSet', 'web'), controller: true }],
      },
      status: { phase: 'Running' },
    });
    assert.deepEqual(podFactsOf(slim), {
      namespace: 'team',
      name: 'p',
      uid: 'u',
      createdAtMs: Date.parse('2026-06-01T12:00:00Z'),
      hash: OLD,
      optedOut: true,
      finished: false,
      owner: owner('ReplicaSet', 'web'),
    });
    assert.equal(podFactsOf({ ...slim, status: { phase: 'Succeeded' } }).finished, true);
    assert.equal(podFactsOf({ ...slim, status: { phase: 'Failed' } }).finished, true);
    assert.equal(podFactsOf({ ...slim, status: { phase: 'Pending' } }).finished, false);

    assert.equal(
      podFactsOf({ metadata: { ...slim.metadata, deletionTimestamp: '2026-06-01T12:00:00Z' } }).finished,
      true,
    );
  });
});
