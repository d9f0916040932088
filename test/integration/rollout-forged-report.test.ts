/**
 * A runtime's admin controls everything in that runtime, its webhook's status ConfigMap included
 * (DESIGN §14): what it says there is a claim about that runtime only. A forged `refusedVersion`
 * or a `firstPodAt` in the far future fails that runtime, and halts, rolls back or holds nothing
 * of the rest of the fleet.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WORKLOADS_KEY, writeWorkloads } from '../../src/api/workload-health.js';
import { eventually } from '../../src/envtest/eventually.js';
import { useControlPlane } from '../support/control-plane.js';
import { RolloutFleet } from '../support/rollout-fleet.js';
import type { RolloutPolicyResource } from '../../src/api/rollout-policy.js';

/** rt-1 is the canary; the rest form a wave of three (with rt-1, four runtimes started). */
const RUNTIMES = ['rt-1', 'rt-2', 'rt-3', 'rt-4'] as const;
const f = new RolloutFleet(useControlPlane({ clusters: ['kcp', ...RUNTIMES] }));
/** The runtime admin's own field manager: the webhook's writes leave its keys alone. */
const ADMIN = 'runtime-admin';
const FAR_FUTURE = '2999-01-01T00:00:00.000Z';

/**
 * Rolls out a new pull Secret's set (auth `auth`) while `forger`'s admin writes `forged(target)`
 * into that runtime's status report; `rollsOut` waits until the rollout is through. Asserts that it
 * never halted and that the target became stable; returns the target and the policy's status.
 */
async function rolloutDespite(
  auth: string,
  forger: string,
  forged: (target: string) => Record<string, string>,
  rollsOut: (target: string) => Promise<void>,
): Promise<{ target: string; done: RolloutPolicyResource['status'] }> {
  const stable = f.sources.snapshot().version;
  const phases = f.tracePhases();
  let target = '';
  try {
    target = await f.newPullSecretSet(auth, stable);
    await f.writeStatusKeys(forger, forged(target), ADMIN);
    await rollsOut(target);
  } finally {
    await phases.stop();
  }
  const seen = await phases.stop();
  const done = (await f.readPolicy()).status;
  assert.ok(!seen.includes('Halted'), `phases seen: ${[...new Set(seen)].join(', ')}`);
  assert.equal(done?.stable, `${target}/1.0.0`);
  return { target, done };
}

describe("a runtime admin's forged report speaks for that runtime only", () => {
  f.useFleet(RUNTIMES, {
    waves: [
      { name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '3s' },
      // Long enough for the KCP to read each runtime's workloads at the target (every second in
      // the fleet's settings) before the soak ends, with room for slow passes.
      { name: 'all', percent: 100, soak: '10s' },
    ],
    // The strictest threshold; minFailedRuntimes is left to its default (2).
    failureThreshold: 0,
    healthDeadline: '60s',
    workloads: { toleratedFailures: 0, observeFor: '5s', preflight: false },
  });

  test('refusedVersion = the target on one runtime: that runtime failed; no halt, no rollback, the others get the target', async () => {
    const runtimes = f.trace(RUNTIMES);
    let rollout: Awaited<ReturnType<typeof rolloutDespite>>;
    try {
      // Before rt-3's wave starts (the canary soaks first), its admin claims the webhook refused it.
      rollout = await rolloutDespite(
        'v2',
        'rt-3',
        (target) => ({ refusedVersion: target, refusal: 'forged by the runtime admin' }),
        async (target) => {
          for (const id of ['rt-1', 'rt-2', 'rt-4']) await f.waitServed(id, target, 90_000);
          await f.waitPhase('Complete', 90_000);
        },
      );
    } finally {
      await runtimes.stop();
    }
    const { target, done } = rollout;
    const samples = await runtimes.stop();
    assert.deepEqual(
      done?.failures?.map((x) => [x.runtime, x.reason]),
      [['rt-3', `the webhook refused set ${target}: forged by the runtime admin`]],
    );
    // Nobody went back: once the canary had the target, it kept it.
    const first = samples.findIndex((s) => s['rt-1']?.applied === target);
    assert.ok(first >= 0);
    for (const s of samples.slice(first))
      assert.equal(s['rt-1']?.applied, target, 'the canary was rolled back');
    assert.equal(await f.metric('rtb_rollout_halts_total'), 0);
    assert.equal(await f.metric('rtb_rollout_rollbacks_total'), 0);
    const rt3 = (await f.readRb('rt-3')).status;
    assert.equal(rt3?.appliedVersion, target, 'the forger itself got the target too');
    assert.equal(rt3.refusedVersion, target);
  });

  test('firstPodAt in the far future on one runtime: it fails its own soak at the deadline; the rollout completes', async () => {
    const { done } = await rolloutDespite(
      'v3',
      // rt-2's admin claims Pods under the target first seen in 2999: observed "until 2999 + 5 s".
      'rt-2',
      (target) => ({
        [WORKLOADS_KEY]: writeWorkloads({
          [target]: { pods: 1, started: 1, failing: 0, failedPods: 0, firstPodAt: FAR_FUTURE, samples: [] },
        }),
      }),
      async (target) => {
        for (const id of RUNTIMES) await f.waitServed(id, target, 90_000);
        // The KCP did read the claim (else this test would prove nothing)...
        await eventually(
          async () =>
            (await f.readRb('rt-2')).status?.workloads?.firstPodAt === FAR_FUTURE ? true : undefined,
          30_000,
          "the KCP to read rt-2's workloads",
        );
        // ...and still completes: soak (10 s) and observeFor (5 s) after the wave was healthy, rt-2 failed.
        await f.waitPhase('Complete', 90_000);
      },
    );
    assert.deepEqual(
      done?.failures?.map((x) => x.runtime),
      ['rt-2'],
    );
    assert.match(
      done.failures[0]?.reason ?? '',
      /still under observation 5 s after the wave soaked \(first Pod reported at 2999-01-01T00:00:00\.000Z\)/,
    );
  });
});
