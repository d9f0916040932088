// The controller's fan-out queue, read from its metrics: how far it got, and whether it is idle.
import { metricValue } from './cpu-groups.js';
import type { ControllerProcess } from './kcp-bench.js';
import { sleep } from './processes.js';

/** The fan-out queue's labels in the controller's metrics. */
export const FANOUT_QUEUE = { name: 'runtimebootstrapper' };

/** Whether the fan-out queue is empty with no worker busy, from a metrics text. */
export const fanoutIdle = (metrics: string): boolean =>
  metricValue(metrics, 'workqueue_depth', FANOUT_QUEUE) === 0 &&
  metricValue(metrics, 'controller_runtime_active_workers', { controller: FANOUT_QUEUE.name }) === 0;

/** The reconciles of the fan-out queue so far, and whether it is idle. */
export async function queueProgress(ctl: ControllerProcess): Promise<{ done: number; idle: boolean }> {
  const m = await ctl.metrics();
  return { done: metricValue(m, 'workqueue_work_duration_seconds_count', FANOUT_QUEUE), idle: fanoutIdle(m) };
}

/**
 * Resolves once the queue has done at least `done` reconciles in all and is idle; rejects after
 * `limitMs` saying how far it got.
 */
export async function untilQueueIdle(ctl: ControllerProcess, done: number, limitMs: number): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const p = await queueProgress(ctl);
    if (p.done >= done && p.idle) return;
    if (performance.now() - t0 > limitMs)
      throw new Error(`the controller's queue did ${p.done} of ${done} reconciles within ${limitMs} ms`);
    await sleep(100);
  }
}
