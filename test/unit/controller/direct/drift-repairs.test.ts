import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { UNFENCED } from '../../../../src/kube/lease-fence.js';
import { DriftRepairs } from '../../../../src/controller/direct/drift-repairs.js';
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
});
