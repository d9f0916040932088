/**
 * Which change-caused failures count against a rollout (DESIGN §14): only regressions, failures
 * of an original image that ran under an earlier set. A runtime's webhook proves what it can on
 * its own (the original ran under another set there: `regressions`) and names the rest by their
 * originals' keys (`unproven`); here, pure, an unproven failure counts too when its original ran
 * under an earlier set on another runtime at the same revision (the canary's, or the waves' so
 * far: `ranBefore`). So one namespace's image that never ran anywhere (a private repository the
 * mirror lacks) halts nothing, while an image the fleet ran and the new set breaks does.
 *
 * A report without these fields (a webhook release before them) proves no regression: the
 * runtime's admin controls the report anyway, and its tenants' Pods could forge those failures.
 */
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import { runtimeView } from './runtime-view.js';
import type { RuntimeView } from './wave-planner.js';

/** What the count needs of one runtime. */
export interface RegressionInput {
  readonly id: string;
  /** The revision it is on; only runtimes at the same one prove each other's failures. */
  readonly current?: string;
  /** Paused or being deleted: proves nothing for others. */
  readonly excluded?: boolean;
  /** Its webhook's figures for the set it is on; undefined when none are read. */
  readonly workloads?: {
    readonly failedPods: number;
    readonly regressions?: number;
    readonly unproven?: readonly { readonly image: string; readonly pods: number }[];
    readonly ranBefore?: readonly string[];
  };
}

/**
 * Per runtime id with workloads: its failed Pods that are regressions, at most its `failedPods`
 * (pure). Linear in the keys the runtimes report; the others' `ranBefore` are scanned only when
 * some runtime has unproven failures.
 */
export function regressionsOf(runtimes: readonly RegressionInput[]): Map<string, number> {
  const out = new Map<string, number>();
  // Per revision, the unproven keys asked about: key → runtimes whose earlier sets ran it (two suffice).
  const wanted = new Map<string, Map<string, string[]>>();
  for (const r of runtimes) {
    const w = r.workloads;
    if (w === undefined) continue;
    out.set(r.id, w.regressions ?? 0);
    if (r.current === undefined || w.unproven === undefined || w.unproven.length === 0) continue;
    let keys = wanted.get(r.current);
    if (keys === undefined) wanted.set(r.current, (keys = new Map<string, string[]>()));
    for (const u of w.unproven) if (!keys.has(u.image)) keys.set(u.image, []);
  }
  if (wanted.size === 0) return clamp(out, runtimes);
  for (const r of runtimes) {
    if (r.excluded === true || r.current === undefined) continue;
    const keys = wanted.get(r.current);
    if (keys === undefined) continue;
    for (const key of r.workloads?.ranBefore ?? []) {
      const where = keys.get(key);
      if (where !== undefined && where.length < 2 && !where.includes(r.id)) where.push(r.id);
    }
  }
  for (const r of runtimes) {
    const w = r.workloads;
    if (w?.unproven === undefined || r.current === undefined) continue;
    const keys = wanted.get(r.current);
    let proven = 0;
    for (const u of w.unproven) if ((keys?.get(u.image) ?? []).some((id) => id !== r.id)) proven += u.pods;
    out.set(r.id, (out.get(r.id) ?? 0) + proven);
  }
  return clamp(out, runtimes);
}

function clamp(counts: Map<string, number>, runtimes: readonly RegressionInput[]): Map<string, number> {
  for (const r of runtimes) {
    const n = counts.get(r.id);
    if (n !== undefined && r.workloads !== undefined) counts.set(r.id, Math.min(n, r.workloads.failedPods));
  }
  return counts;
}

/** A RuntimeBootstrapper as {@link regressionsOf} reads it: its figures only for the set applied. */
export function regressionInputOf(rb: RuntimeBootstrapper, view: RuntimeView): RegressionInput {
  const w = rb.status?.workloads;
  return {
    id: view.id,
    current: view.current,
    excluded: view.excluded,
    workloads: view.workloads !== undefined ? w : undefined,
  };
}

/**
 * The planner's views of the RuntimeBootstrappers, with `workloads.failedPods` meaning the
 * regressions among them (pure): what a wave's health and a halt count.
 */
export function planningViews(rbs: readonly RuntimeBootstrapper[]): RuntimeView[] {
  const views = rbs.map(runtimeView);
  const counts = regressionsOf(rbs.map((rb, i) => regressionInputOf(rb, views[i] ?? runtimeView(rb))));
  return views.map((v) => {
    const w = v.workloads;
    if (w === undefined) return v;
    return { ...v, workloads: { ...w, failedPods: counts.get(v.id) ?? 0 } };
  });
}
