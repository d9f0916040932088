import type { KubernetesObject } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyInStages, applyStages } from '../../../../src/controller/direct/apply-stages.js';
import { RuntimeInstaller } from '../../../../src/controller/direct/runtime-installer.js';
import { UNFENCED } from '../../../../src/kube/lease-fence.js';
import { startLoopbackServer } from '../../../support/loopback-server.js';
import { planRuntime } from '../../../../src/controller/direct/runtime-manifests.js';
import { buildSyncSet } from '../../../../src/controller/direct/sync-set.js';
import { syncSources } from '../../../support/fixtures.js';

const built = buildSyncSet(syncSources());
assert.ok(built.ok);
const plan = planRuntime(
  built.set,
  { image: 'example.com/rtb:1.0.0', version: '1.0.0', restartNamespaces: ['istio-system'] },
  {
    drift: {
      listenerUrl: 'https://listener.example.com',
      clientTls: { certPem: 'c', keyPem: 'k', caPem: 'a' },
    },
  },
);

const kindsOf = (stages: readonly (readonly KubernetesObject[])[]): string[][] =>
  stages.map((s) => s.map((o) => o.kind ?? ''));
const named = (kind: string, name = kind): KubernetesObject => ({
  apiVersion: 'v1',
  kind,
  metadata: { name },
});

describe('applyStages', () => {
  test("the set's objects go one by one, Namespace first and ConfigMap last", () => {
    assert.deepEqual(kindsOf(applyStages(plan.sources)), [
      ['Namespace'],
      ['ClusterTrustBundle'],
      ['Secret'],
      ['ConfigMap'],
    ]);
  });

  test("the webhook's objects go together up to the Deployment, which waits for all of them", () => {
    const stages = applyStages(plan.webhook);
    const deployment = stages.findIndex((s) => s.some((o) => o.kind === 'Deployment'));
    assert.equal(stages[deployment]?.length, 1, 'the Deployment alone');
    const before = stages.slice(0, deployment).flat();
    assert.equal(stages.slice(0, deployment).length, 1, 'one stage before it');
    assert.deepEqual(
      new Set(before.map((o) => o.kind)),
      new Set([
        'ServiceAccount',
        'ClusterRole',
        'ClusterRoleBinding',
        'Role',
        'RoleBinding',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
        'Secret',
        'Service',
        'NetworkPolicy',
      ]),
    );
    assert.deepEqual(kindsOf(stages.slice(deployment + 1)), [['PodDisruptionBudget']]);
    assert.deepEqual(
      stages.flat().map((o) => o.metadata?.name),
      plan.webhook.map((o) => o.metadata?.name),
      'every object once, in plan order',
    );
  });

  test('the webhook configurations are registered together', () => {
    assert.deepEqual(kindsOf(applyStages(plan.registration)), [
      ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'],
    ]);
  });

  test('a set object of an independent kind still goes alone', () => {
    const pull = plan.sources.find((o) => o.kind === 'Secret');
    assert.ok(pull);
    assert.deepEqual(
      applyStages([named('ServiceAccount'), pull, named('Service')]).map((s) => s.length),
      [1, 1, 1],
    );
  });

  test('an unknown kind waits for what comes before it, and what follows waits for it', () => {
    assert.deepEqual(
      kindsOf(applyStages([named('Service', 'a'), named('Service', 'b'), named('Widget'), named('Secret')])),
      [['Service', 'Service'], ['Widget'], ['Secret']],
    );
  });
});

/** An apply of each object that ends when the test says so, recording what is in flight. */
function gatedApplies(): {
  applyOne: (o: KubernetesObject) => Promise<void>;
  inFlight: () => string[];
  started: string[];
  finish: (name: string, error?: Error) => void;
} {
  const pending = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  const started: string[] = [];
  return {
    applyOne: (o) =>
      new Promise<void>((resolve, reject) => {
        const name = o.metadata?.name ?? '';
        started.push(name);
        pending.set(name, {
          resolve: () => {
            pending.delete(name);
            resolve();
          },
          reject: (e) => {
            pending.delete(name);
            reject(e);
          },
        });
      }),
    inFlight: () => [...pending.keys()],
    started,
    finish: (name, error) => {
      const p = pending.get(name);
      assert.ok(p, `${name} in flight`);
      if (error) p.reject(error);
      else p.resolve();
    },
  };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('applyInStages', () => {
  const objects = [named('Role', 'r1'), named('Role', 'r2'), named('Role', 'r3'), named('Deployment', 'd')];

  test('at most `parallel` applies at once, and the next stage only after the whole stage', async () => {
    const g = gatedApplies();
    const done = applyInStages(objects, 2, g.applyOne);
    await turn();
    assert.deepEqual(g.inFlight(), ['r1', 'r2']);
    g.finish('r2');
    await turn();
    assert.deepEqual(g.inFlight(), ['r1', 'r3']);
    g.finish('r3');
    await turn();
    assert.deepEqual(g.inFlight(), ['r1'], 'the Deployment waits for r1');
    g.finish('r1');
    await turn();
    assert.deepEqual(g.inFlight(), ['d']);
    g.finish('d');
    await done;
    assert.deepEqual(g.started, ['r1', 'r2', 'r3', 'd']);
  });

  test('parallel 1 applies one by one in plan order', async () => {
    const g = gatedApplies();
    const done = applyInStages(objects, 1, g.applyOne);
    for (const name of ['r1', 'r2', 'r3', 'd']) {
      await turn();
      assert.deepEqual(g.inFlight(), [name]);
      g.finish(name);
    }
    await done;
  });

  test('a failure ends the stage once its applies in flight have ended, and starts nothing more', async () => {
    const g = gatedApplies();
    let settled = false;
    const done = applyInStages(objects, 2, g.applyOne).finally(() => {
      settled = true;
    });
    await turn();
    g.finish('r2', new Error('r2 refused'));
    await turn();
    assert.deepEqual(g.inFlight(), ['r1'], 'r3 not started after the failure');
    assert.equal(settled, false, 'not thrown while r1 is in flight');
    g.finish('r1');
    await assert.rejects(done, /r2 refused/);
    assert.deepEqual(g.started, ['r1', 'r2'], 'no later stage');
  });

  test('of two failures the first in plan order is thrown', async () => {
    const g = gatedApplies();
    const done = applyInStages(objects, 2, g.applyOne);
    await turn();
    g.finish('r2', new Error('r2 refused'));
    await turn();
    g.finish('r1', new Error('r1 refused'));
    await assert.rejects(done, /r1 refused/);
  });
});

describe("a runtime installer's applies", () => {
  test("send the webhook's objects two at a time, and the Deployment after all before it were answered", async () => {
    let inFlight = 0;
    let most = 0;
    const events: string[] = [];
    const loopback = await startLoopbackServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      inFlight += 1;
      most = Math.max(most, inFlight);
      events.push(`start ${path}`);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        setTimeout(() => {
          inFlight -= 1;
          events.push(`end ${path}`);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(Buffer.concat(chunks));
        }, 10);
      });
    });
    try {
      const stored: string[] = [];
      await new RuntimeInstaller(loopback.access, 5_000, UNFENCED, 2).apply(plan.webhook, (o, answer) => {
        stored.push(`${o.kind ?? ''}/${answer?.metadata?.name ?? 'no answer'}`);
      });
      assert.equal(most, 2, 'two applies at once');
      const deployment = events.findIndex((e) => e.startsWith('start') && e.includes('/deployments/'));
      const lastBefore = plan.webhook.length - 2;
      assert.equal(
        events.slice(0, deployment).filter((e) => e.startsWith('end')).length,
        lastBefore,
        'every object before the Deployment answered before it is sent',
      );
      assert.deepEqual(
        [...stored].sort(),
        plan.webhook.map((o) => `${o.kind ?? ''}/${o.metadata?.name ?? ''}`).sort(),
        'each object handed over once, with its answer',
      );
    } finally {
      await loopback.close();
    }
  });
});
