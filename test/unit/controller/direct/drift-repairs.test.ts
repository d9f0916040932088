import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { UNFENCED } from '../../../../src/kube/lease-fence.js';
import {
  DriftRepairs,
  reportAsks,
  WEBHOOK_REPORT_OBJECT,
} from '../../../../src/controller/direct/drift-repairs.js';
import { RepairLatency } from '../../../../src/controller/direct/repair-latency.js';

const SECRET = 'Secret/kyma-system/registry-credentials';
const CONFIG = 'ConfigMap/kyma-system/rt-bootstrapper-config';

/** Drift repairs over a reconciler that records what each repair was asked to write. */
function repairs(): { drift: DriftRepairs; asked: (readonly string[] | 'set')[]; done: Promise<void> } {
  const asked: (readonly string[] | 'set')[] = [];
  let resolveDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  const registry = new Registry();
  const drift = new DriftRepairs({
    reconciler: {
      repairSet: (_key, _fence, reported) => {
        asked.push(reported === undefined ? 'set' : [...reported].sort());
        resolveDone();
        return Promise.resolve(true);
      },
      force: () => undefined,
    },
    queue: { add: () => undefined },
    keyOfRuntime: (runtimeId) => (runtimeId === 'runtime-a' ? 'kcp-system/rb-a' : undefined),
    run: (_key, work) => work(UNFENCED),
    registry,
    latency: new RepairLatency(registry),
    concurrency: 1,
    confirmDelayMs: 60_000,
  });
  return { drift, asked, done };
}

/** What runtime-a's repair asked to write after `objects` were reported before it began. */
async function askedAfter(objects: readonly (string | undefined)[]): Promise<(readonly string[] | 'set')[]> {
  const { drift, asked, done } = repairs();
  for (const object of objects) drift.report('runtime-a', Date.now(), object);
  drift.start();
  await done;
  await drift.stop();
  return asked;
}

describe('drift repairs', () => {
  test('reports before a repair begins are written together, only the objects they name', async () => {
    assert.deepEqual(await askedAfter([SECRET, CONFIG, SECRET]), [[CONFIG, SECRET].sort()]);
  });

  test('a report that names no object, or a Namespace, repairs the whole set', async () => {
    for (const object of [undefined, 'Namespace//kyma-system']) {
      assert.deepEqual(await askedAfter([SECRET, object, CONFIG]), ['set'], String(object));
    }
  });

  test('a report of a runtime with no RuntimeBootstrapper repairs nothing', async () => {
    const { drift, asked } = repairs();
    drift.report('runtime-unknown', Date.now(), SECRET);
    drift.start();
    await drift.stop();
    assert.deepEqual(asked, []);
  });

  test("a report naming the webhook's status ConfigMap asks a look; any other object a repair", () => {
    assert.equal(WEBHOOK_REPORT_OBJECT, 'ConfigMap/kyma-system/rt-bootstrapper-webhook-status');
    assert.equal(reportAsks(WEBHOOK_REPORT_OBJECT), 'look');
    for (const object of [
      SECRET,
      CONFIG,
      undefined,
      'ConfigMap/default/rt-bootstrapper-webhook-status',
      'Secret/kyma-system/rt-bootstrapper-webhook-status',
    ])
      assert.equal(reportAsks(object), 'repair', String(object));
  });

  test("a report naming the webhook's status ConfigMap repairs nothing and forces one full pass of its runtime a moment later", async () => {
    const asked: string[] = [];
    const forced: string[] = [];
    const queued: string[] = [];
    let confirmed: () => void = () => undefined;
    const confirmation = new Promise<void>((resolve) => {
      confirmed = resolve;
    });
    const registry = new Registry();
    const latency = new RepairLatency(registry);
    const drift = new DriftRepairs({
      reconciler: {
        repairSet: (key) => {
          asked.push(key);
          return Promise.resolve(true);
        },
        force: (key) => {
          forced.push(key);
        },
      },
      queue: {
        add: (key) => {
          queued.push(key);
          confirmed();
        },
      },
      keyOfRuntime: (runtimeId) => (runtimeId === 'runtime-a' ? 'kcp-system/rb-a' : undefined),
      run: (_key, work) => work(UNFENCED),
      registry,
      latency,
      concurrency: 1,
      confirmDelayMs: 10,
    });
    drift.start();
    // Two replicas of the webhook tell the same finding: one pass.
    drift.report('runtime-a', Date.now(), WEBHOOK_REPORT_OBJECT);
    drift.report('runtime-a', Date.now(), WEBHOOK_REPORT_OBJECT);
    drift.report('runtime-unknown', Date.now(), WEBHOOK_REPORT_OBJECT);
    // The confirmation's timer does not hold the process open (unref'd); this one does meanwhile.
    const keepAlive = setTimeout(() => undefined, 10_000);
    await confirmation;
    clearTimeout(keepAlive);
    await drift.stop();
    assert.deepEqual(asked, [], 'nothing of the set is written for it');
    assert.deepEqual(forced, ['kcp-system/rb-a'], 'the pass is forced (it reads the report)');
    assert.deepEqual(queued, ['kcp-system/rb-a']);
    // No drift repair was measured: the full pass ending closes no measurement.
    latency.repaired('kcp-system/rb-a', true);
    const repairs = (await registry.getSingleMetric('rtb_drift_repair_seconds')?.get())?.values ?? [];
    const count = repairs.find(
      (v) => (v as { metricName?: string }).metricName === 'rtb_drift_repair_seconds_count',
    );
    assert.equal(count?.value ?? 0, 0);
  });
});
