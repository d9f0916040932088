import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { assembleDirectMode } from '../../../../src/controller/direct/direct-mode.js';
import type { DirectModeChoices } from '../../../../src/controller/direct/direct-mode-options.js';

/** Direct mode's parts in start order, built against a KCP nothing talks to (nothing starts). */
function planOf(choices: Partial<DirectModeChoices> = {}): string[] {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'kcp', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'kcp', user: 'u' }],
    currentContext: 'c',
  });
  const { parts } = assembleDirectMode({
    kubeConfig,
    namespace: 'kcp-system',
    sources: { snapshot: () => ({ version: 'v1' }), onChange: () => () => undefined },
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
    release: { image: 'example.com/rtb:1', version: '1.0.0' },
    ...choices,
  });
  // Nothing started, so nothing to stop (the shard's recount timer does not hold the process).
  return parts.plan().map((p) => p.name);
}

const before = (plan: string[], first: string, then: string): void => {
  assert.ok(plan.indexOf(first) >= 0 && plan.indexOf(then) >= 0, `${first} and ${then} are parts`);
  assert.ok(plan.indexOf(first) < plan.indexOf(then), `${first} starts before ${then}: ${plan.join(', ')}`);
};

test('direct mode starts the CA, the caches, the source set and the rollout before any reconcile', () => {
  const plan = planOf();
  before(plan, 'CA', 'reconciles');
  before(plan, 'caches', 'source set');
  before(plan, 'source set', 'rollout');
  before(plan, 'rollout', 'reconciles');
  before(plan, 'reconciles', 'drift repairs');
  before(plan, 'drift repairs', 'drift listener');
  before(plan, 'drift listener', 'CA upkeep');
  assert.equal(plan[0], 'KCP connections', 'the connections close last');
});

test('a sharded direct mode joins its shard last, so it leaves first when it stops', () => {
  const plan = planOf({
    shard: { identity: 'replica-a' },
    autoCreateSelector: '',
    driftListener: { port: 0 },
  });
  assert.equal(plan.at(-2), 'shard', plan.join(', '));
  for (const name of ['reconciles', 'drift repairs', 'drift listener', 'periodic resync', 'runtime mirror'])
    before(plan, name, 'shard');
});
