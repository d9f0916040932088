import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  deploymentRollout,
  readyEndpointsOf,
  type RolloutDeployment,
} from '../../../../src/controller/direct/deployment-rollout.js';

/** A Deployment of 2 replicas at generation 2 with `status`. */
const deployment = (status: NonNullable<RolloutDeployment['status']>): RolloutDeployment => ({
  metadata: { generation: 2 },
  spec: { replicas: 2 },
  status: { observedGeneration: 2, ...status },
});

describe('deploymentRollout', () => {
  test('ready once every wanted replica is updated and available', () => {
    const r = deploymentRollout(
      deployment({ replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }),
    );
    assert.deepEqual(r, { ready: true, newPodsReady: false, want: 2, message: '2/2 replicas available' });
  });

  test('new Pods all Ready with no old Pod left, none available yet: only minReadySeconds is missing', () => {
    const r = deploymentRollout(deployment({ replicas: 2, updatedReplicas: 2, readyReplicas: 2 }));
    assert.equal(r.ready, false);
    assert.equal(r.newPodsReady, true);
    assert.equal(r.message, 'waiting for the rollout: 2 updated, 2 ready, 0 available of 2, 2 Pods in all');
  });

  for (const [why, d] of [
    ['a Pod of the old template is left', deployment({ replicas: 3, updatedReplicas: 2, readyReplicas: 2 })],
    ['one new Pod is not Ready', deployment({ replicas: 2, updatedReplicas: 2, readyReplicas: 1 })],
    ['not every replica is updated', deployment({ replicas: 2, updatedReplicas: 1, readyReplicas: 2 })],
    [
      'the generation is not observed yet',
      { ...deployment({ replicas: 2, updatedReplicas: 2, readyReplicas: 2 }), metadata: { generation: 3 } },
    ],
  ] as const)
    test(`not newPodsReady when ${why}`, () => {
      const r = deploymentRollout(d);
      assert.equal(r.ready, false);
      assert.equal(r.newPodsReady, false);
    });

  test('the message moves with every count the rollout changes (the watch wakes on it)', () => {
    const base = { replicas: 3, updatedReplicas: 2, readyReplicas: 1 };
    const messages = [
      base,
      { ...base, replicas: 2 },
      { ...base, updatedReplicas: 1 },
      { ...base, readyReplicas: 2 },
      { ...base, availableReplicas: 1 },
    ].map((s) => deploymentRollout(deployment(s)).message);
    assert.equal(new Set(messages).size, messages.length);
  });
});

describe('readyEndpointsOf', () => {
  test('counts the endpoints of every slice that are ready or say nothing of it', () => {
    assert.equal(
      readyEndpointsOf({
        items: [
          { endpoints: [{ conditions: { ready: true } }, { conditions: { ready: false } }, {}] },
          { endpoints: [{ conditions: { ready: null } }] },
          { endpoints: null },
          {},
        ],
      }),
      3,
    );
  });

  test('no slice: none', () => {
    assert.equal(readyEndpointsOf({}), 0);
    assert.equal(readyEndpointsOf({ items: [] }), 0);
  });
});
