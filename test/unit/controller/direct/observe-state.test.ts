import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import type { TrustBundleCapability } from '../../../../src/api/trust-bundle-capability.js';
import { readWebhookConfig } from '../../../../src/api/webhook-config.js';
import { sFnObserve } from '../../../../src/controller/direct/observe-state.js';
import type { PreflightCandidate } from '../../../../src/controller/direct/preflight-candidate.js';
import type { RolloutChoice } from '../../../../src/controller/direct/rollout-chooser.js';
import { RuntimeUnreachableError } from '../../../../src/controller/direct/runtime-unreachable.js';
import {
  goTo,
  NOTHING_FOUND,
  type BootstrapperOps,
  type StateContext,
  type StateFn,
} from '../../../../src/controller/direct/state-context.js';
import { runStateMachine } from '../../../../src/controller/direct/state-machine.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import type { SyncSetResult } from '../../../../src/controller/direct/sync-set.js';
import {
  WORKLOAD_SLOW_LOOK_MS,
  WORKLOAD_WATCH_MS,
} from '../../../../src/controller/direct/webhook-report.js';
import type { LeaseFence } from '../../../../src/kube/lease-fence.js';
import { seedConfigText } from '../../../support/fixtures.js';
import { unusedOps } from './fake-serving-runtime.js';
import { keptTrustProjection } from '../../../support/trust-projection-condition.js';
import { stateContext } from '../../../support/state-context.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

/** A set without a trust bundle: the projection's look stays out of these tests. */
const SET: SyncSetResult = {
  ok: true,
  set: {
    version: 'v2',
    config: readWebhookConfig(JSON.parse(seedConfigText()) as unknown).config,
    objects: [],
  },
};

const bootstrapper = (status: RuntimeBootstrapper['status']): RuntimeBootstrapper => ({
  metadata: { name: 'rt', namespace: 'kcp-system', generation: 1 },
  spec: { runtimeID: 'rt' },
  status,
});

/** The runtime's webhook as the last state sees it (serving v2): reads of its report and preflight writes, counted. */
class Webhook {
  reads = 0;
  /** What the webhook found out about the trust-bundle mount, when it says. */
  trustBundle: TrustBundleCapability | undefined;
  preflights: (string | undefined)[] = [];
  preflightFails = false;
  refused: RuntimeUnreachableError | undefined;
  readonly ops: BootstrapperOps = unusedOps({
    readWebhookReport: () => {
      this.reads++;
      return Promise.resolve({ loadedVersion: 'v2', trustBundle: this.trustBundle });
    },
    writePreflight: (candidate: PreflightCandidate | undefined) => {
      this.preflights.push(candidate?.version);
      return this.preflightFails ? Promise.reject(new Error('forbidden')) : Promise.resolve();
    },
    refusal: () => this.refused,
  });
}

function contextOf(
  rb: RuntimeBootstrapper,
  webhook: Webhook,
  o: { rollout?: RolloutChoice; fence?: LeaseFence; workloadsLookedAt?: number; set?: SyncSetResult } = {},
): StateContext {
  return stateContext({
    rb,
    set: o.set ?? SET,
    ops: webhook.ops,
    status: new StatusBuilder(rb, new Date(NOW)),
    serving: { policy: {} as never, dnsNames: [], ipAddresses: [], caPem: () => '', now: () => NOW },
    rollout: o.rollout,
    workloadsLookedAt: o.workloadsLookedAt,
    fence: o.fence ?? (() => true),
  });
}

/** A state that ends the states' work Ready (at the set the status holds), requeued after `ms`. */
const readyAfter =
  (ms?: number): StateFn =>
  (ctx) => {
    ctx.status.state('Ready');
    return Promise.resolve(ms === undefined ? {} : { requeueAfterMs: ms });
  };

const AT_REST = bootstrapper({ state: 'Ready', appliedVersion: 'v2', rolloutWave: 'earlier' });

describe('the last state of a pass', () => {
  test('a report read anyway at rest tells the projection too: kubelets too old turn a Kept runtime False', async () => {
    const bundle = {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'ClusterTrustBundle',
      metadata: { name: 'b' },
    };
    const withBundle: SyncSetResult = { ok: true, set: { ...SET.set, objects: [bundle] } };
    const kept = keptTrustProjection(new Date(NOW));
    const webhook = new Webhook();
    webhook.trustBundle = {
      api: 'certificates.k8s.io/v1',
      projection: 'kept',
      kubelets:
        'kubelets that cannot read the ClusterTrustBundle API served (certificates.k8s.io/v1): pool legacy (v1.34.4, 1 node)',
    };
    const ctx = contextOf(
      bootstrapper({ state: 'Ready', appliedVersion: 'v2', conditions: [kept] }),
      webhook,
      {
        set: withBundle,
      },
    );
    await runStateMachine(readyAfter(), ctx);
    assert.equal(webhook.reads, 1, 'one read: the workloads look, which the projection shares');
    assert.equal(ctx.status.get('TrustBundleProjection')?.reason, 'KubeletTooOld');
  });

  test('runs after every end of the states’ work: a wave only where it ended well, and no stale one without a rollout', async () => {
    const paused: StateFn = (ctx) => {
      ctx.status.state('Paused');
      return Promise.resolve({});
    };
    const failing: StateFn = () => Promise.resolve({ error: new Error('apply failed') });
    const wave = { set: SET, release: { image: 'i', version: '1.0.0' }, wave: 'canary' };

    const ok = contextOf(AT_REST, new Webhook(), { rollout: wave });
    assert.deepEqual((await runStateMachine(paused, ok)).outcome, {});
    assert.equal(ok.status.build().rolloutWave, 'canary');

    const failed = contextOf(AT_REST, new Webhook(), { rollout: wave });
    assert.match((await runStateMachine(failing, failed)).outcome.error?.message ?? '', /apply failed/);
    assert.equal(failed.status.build().rolloutWave, 'earlier', 'a failed pass moves no wave');

    const none = contextOf(AT_REST, new Webhook());
    await runStateMachine(failing, none);
    assert.equal(none.status.build().rolloutWave, undefined, 'no rollout: the wave goes, whatever the end');
  });

  test('reads what a state found: a pass that wrote the webhook reads no workloads and asks for the slow look', async () => {
    const wrote: StateFn = (_ctx, found) => Promise.resolve(goTo(readyAfter(), { ...found, wrote: true }));
    const fresh = new Webhook();
    const pass = await runStateMachine(wrote, contextOf(AT_REST, fresh));
    assert.equal(fresh.reads, 0, 'no Pod can be under the webhook just written');
    assert.deepEqual(pass.outcome, { requeueAfterMs: WORKLOAD_SLOW_LOOK_MS });
    assert.equal(pass.workloadsLookedAt, undefined);

    const rest = new Webhook();
    const looked = await runStateMachine(readyAfter(), contextOf(AT_REST, rest));
    assert.equal(rest.reads, 1);
    assert.equal(looked.workloadsLookedAt, NOW, 'kept for the next pass');

    const soon = new Webhook();
    await runStateMachine(readyAfter(), contextOf(AT_REST, soon, { workloadsLookedAt: NOW - 1_000 }));
    assert.equal(soon.reads, 0, 'read a second ago by an earlier pass');
  });

  test('the earliest of the states’ requeue and its own looks ends the pass', async () => {
    const watched = new Webhook();
    const rollout = { set: SET, release: { image: 'i', version: '1.0.0' }, wave: 'w', watch: true };
    const pass = await runStateMachine(readyAfter(60_000), contextOf(AT_REST, watched, { rollout }));
    assert.deepEqual(pass.outcome, { requeueAfterMs: WORKLOAD_WATCH_MS });
    const early = await runStateMachine(readyAfter(5), contextOf(AT_REST, new Webhook(), { rollout }));
    assert.deepEqual(early.outcome, { requeueAfterMs: 5 });
  });

  test('once this replica no longer holds the runtime, it looks at nothing and writes nothing', async () => {
    const webhook = new Webhook();
    const preflight = { version: 'v3', config: '{}' };
    const rollout = { set: SET, release: { image: 'i', version: '1.0.0' }, wave: 'w', preflight };
    const ctx = contextOf(AT_REST, webhook, { rollout, fence: () => false });
    const pass = await runStateMachine(readyAfter(), ctx);
    assert.deepEqual([webhook.reads, webhook.preflights], [0, []]);
    assert.deepEqual(pass.outcome, {});
    assert.equal(ctx.status.build().rolloutWave, 'earlier');
  });

  test('a call that broke a bound fails the pass (RuntimeReachable False); one abandoned as the process stops changes nothing', async () => {
    const slow = new Webhook();
    slow.refused = new RuntimeUnreachableError('too slow', undefined, 'DeadlineExceeded');
    const ctx = contextOf(AT_REST, slow);
    const pass = await sFnObserve(ctx, NOTHING_FOUND, {});
    assert.equal(pass.outcome.error, slow.refused);
    assert.equal(ctx.status.build().state, 'Error');
    assert.equal(ctx.status.get('RuntimeReachable')?.reason, 'DeadlineExceeded');

    const stopping = new Webhook();
    stopping.refused = new RuntimeUnreachableError('stopping', undefined, 'Stopping');
    const quiet = contextOf(AT_REST, stopping);
    quiet.status.state('Ready');
    const ended = await sFnObserve(quiet, NOTHING_FOUND, {});
    assert.equal(ended.outcome.error, undefined, 'the reconciler reports nothing of it');
    assert.equal(quiet.status.build().state, 'Ready');
    assert.equal(quiet.status.get('RuntimeReachable'), undefined);
  });

  test('the preflight candidate is placed only when it changes; a failed write asks for another pass soon', async () => {
    const preflight = { version: 'v3', config: '{}' };
    const rollout = { set: SET, release: { image: 'i', version: '1.0.0' }, wave: 'w', preflight };
    const placed = new Webhook();
    const ctx = contextOf(AT_REST, placed, { rollout, workloadsLookedAt: NOW });
    await runStateMachine(readyAfter(), ctx);
    assert.deepEqual(placed.preflights, ['v3']);
    assert.equal(ctx.status.build().preflightCandidate, 'v3');

    const there = new Webhook();
    const held = bootstrapper({ ...AT_REST.status, preflightCandidate: 'v3' });
    await runStateMachine(readyAfter(), contextOf(held, there, { rollout, workloadsLookedAt: NOW }));
    assert.deepEqual(there.preflights, []);

    const refused = new Webhook();
    refused.preflightFails = true;
    const failed = contextOf(AT_REST, refused, { rollout, workloadsLookedAt: NOW });
    const pass = await runStateMachine(readyAfter(), failed);
    assert.deepEqual(pass.outcome, { requeueAfterMs: WORKLOAD_WATCH_MS });
    assert.equal(failed.status.build().preflightCandidate, undefined);
  });
});
