import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  deploymentRollout,
  type RolloutDeployment,
} from '../../../../src/controller/direct/deployment-rollout.js';
import {
  FAILED_WATCH_BACKOFF_MS,
  MAX_EVENTS,
  RolloutWatches,
  trustSeen,
  WATCH_SECONDS,
} from '../../../../src/controller/direct/rollout-watch.js';
import { TRUST_STATUS_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import { trustStatusValue } from '../../../../src/runtime-agent/trust-restart/restart-status.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import { ScriptedListerWatcher, until } from '../../kube/scripted-lister-watcher.js';

const NAME = 'rt-bootstrapper-controller-manager';

/** The webhook Deployment at resourceVersion `rv` with `available` of 2 replicas available (all updated). */
const deployment = (rv: string, available: number): RolloutDeployment => ({
  metadata: { generation: 1, resourceVersion: rv },
  spec: { replicas: 2 },
  status: { observedGeneration: 1, updatedReplicas: 2, availableReplicas: available },
});
const seenAt = (rv: string, available: number) => ({
  resourceVersion: rv,
  message: deploymentRollout(deployment(rv, available)).message,
  trust: trustSeen(undefined),
});

function harness(o: { max?: number } = {}) {
  const woken: string[] = [];
  let now = 1_000_000;
  const watches = new RolloutWatches({
    wake: (key) => woken.push(key),
    logger: silentLogger(),
    max: o.max,
    now: () => now,
  });
  const lw = () => new ScriptedListerWatcher<RolloutDeployment>(() => ({ items: [], resourceVersion: '1' }));
  return {
    woken,
    watches,
    lw,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

/** `h` follows each of `keys` from resourceVersion `rv`, each through its own lister-watcher: those. */
function followEach(h: ReturnType<typeof harness>, keys: readonly [string, string], rv: string) {
  const follow = (key: string) => {
    const lw = h.lw();
    h.watches.follow(key, lw, NAME, seenAt(rv, 0));
    return lw;
  };
  return [follow(keys[0]), follow(keys[1])] as const;
}

/** A harness following runtime `ns/rt-1` from resourceVersion 7: it, and the watch it opened. */
async function following() {
  const h = harness();
  const lw = h.lw();
  h.watches.follow('ns/rt-1', lw, NAME, seenAt('7', 0));
  return { h, s: await lw.watchNo(0) };
}

describe('rollout watches: a rollout wakes its runtime when it moves, not a poll', () => {
  test('one watch of the Deployment by name from the resourceVersion the pass read', async () => {
    const h = harness();
    const lw = h.lw();
    assert.equal(h.watches.follow('ns/rt-1', lw, NAME, seenAt('7', 0)), true);
    const s = await lw.watchNo(0);
    assert.equal(s.opts.resourceVersion, '7');
    assert.equal(s.opts.fieldSelector, `metadata.name=${NAME}`);
    assert.equal(s.opts.timeoutSeconds, WATCH_SECONDS);
    // Followed already: no second watch.
    assert.equal(h.watches.follow('ns/rt-1', lw, NAME, seenAt('7', 0)), true);
    assert.equal(lw.watches.length, 1);
    h.watches.stop();
  });

  test('an event that leaves the rollout as the pass saw it wakes nothing; one that moves it wakes its runtime once', async () => {
    const { h, s } = await following();
    s.emit('BOOKMARK', deployment('8', 0));
    s.emit('MODIFIED', deployment('9', 0));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(h.woken, []);
    assert.equal(s.isEnded(), false);
    s.emit('MODIFIED', deployment('10', 2));
    await until(() => h.woken.length > 0, 'the wake');
    assert.deepEqual(h.woken, ['ns/rt-1']);
    assert.equal(s.isEnded(), true, 'the watch ends with the wake');
    assert.equal(h.watches.size, 0);
  });

  test('a new report of the trust-bundle restarter on the Deployment wakes the runtime too (its count rides on the read)', async () => {
    const { h, s } = await following();
    const reported = deployment('8', 0);
    s.emit('MODIFIED', {
      ...reported,
      metadata: {
        ...reported.metadata,
        annotations: {
          [TRUST_STATUS_ANNOTATION]: trustStatusValue(
            'abc',
            { stalePods: 3, barePods: 0, optedOutPods: 0 },
            new Date(),
          ),
        },
      },
    });
    await until(() => h.woken.length > 0, 'the wake');
    assert.deepEqual(h.woken, ['ns/rt-1']);
  });

  test('the Deployment deleted, or the watch ended by the server, wakes the runtime (it reads again)', async () => {
    const h = harness();
    const [deleted, ended] = followEach(h, ['ns/rt-1', 'ns/rt-2'], '7');
    (await deleted.watchNo(0)).emit('DELETED', deployment('8', 0));
    (await ended.watchNo(0)).end();
    await until(() => h.woken.length === 2, 'both wakes');
    assert.deepEqual([...h.woken].sort(), ['ns/rt-1', 'ns/rt-2']);
    // Neither failed: both are watched again at once.
    assert.equal(h.watches.follow('ns/rt-1', h.lw(), NAME, seenAt('8', 0)), true);
    h.watches.stop();
  });

  test('at most `max` watches at once: beyond, the pass polls', () => {
    const h = harness({ max: 2 });
    assert.equal(h.watches.follow('ns/a', h.lw(), NAME, seenAt('1', 0)), true);
    assert.equal(h.watches.follow('ns/b', h.lw(), NAME, seenAt('1', 0)), true);
    assert.equal(h.watches.follow('ns/c', h.lw(), NAME, seenAt('1', 0)), false);
    h.watches.forget('ns/a');
    assert.equal(h.watches.follow('ns/c', h.lw(), NAME, seenAt('1', 0)), true);
    h.watches.stop();
  });

  const failures: readonly [
    how: string,
    fail: (s: Awaited<ReturnType<ScriptedListerWatcher<RolloutDeployment>['watchNo']>>) => void,
  ][] = [
    [
      'a failed watch',
      (s) => {
        s.fail(new Error('403 forbidden'));
      },
    ],
    [
      'an ERROR event (the resourceVersion expired)',
      (s) => {
        s.emit('ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
      },
    ],
  ];
  for (const [how, fail] of failures) {
    test(`${how} wakes its runtime, which is then polled for a while before it is watched again`, async () => {
      const { h, s } = await following();
      fail(s);
      await until(() => h.woken.length === 1, 'the wake');
      assert.equal(h.watches.follow('ns/rt-1', h.lw(), NAME, seenAt('7', 0)), false);
      h.advance(FAILED_WATCH_BACKOFF_MS);
      assert.equal(h.watches.follow('ns/rt-1', h.lw(), NAME, seenAt('7', 0)), true);
      h.watches.stop();
    });
  }

  test('a runtime streaming events that change nothing is cut off after MAX_EVENTS and polled', async () => {
    const { h, s } = await following();
    for (let i = 0; i < MAX_EVENTS; i++) s.emit('MODIFIED', deployment(String(8 + i), 0));
    assert.equal(s.isEnded(), false);
    s.emit('MODIFIED', deployment('999', 0));
    assert.equal(s.isEnded(), true);
    await until(() => h.woken.length === 1, 'the wake');
    assert.equal(h.watches.follow('ns/rt-1', h.lw(), NAME, seenAt('7', 0)), false);
  });

  test('forgotten (CR gone, handed over) or stopped: the watch ends and wakes nothing', async () => {
    const h = harness();
    const [a, b] = followEach(h, ['ns/a', 'ns/b'], '1');
    h.watches.forget('ns/a');
    assert.equal((await a.watchNo(0)).isEnded(), true);
    h.watches.stop();
    assert.equal((await b.watchNo(0)).isEnded(), true);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(h.woken, []);
    assert.equal(h.watches.follow('ns/c', h.lw(), NAME, seenAt('1', 0)), false, 'none opens once stopped');
  });
});
