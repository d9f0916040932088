import { isDeepStrictEqual } from 'node:util';
import { RTB_FINALIZER, type RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import { DRIFT_REPORTED_ANNOTATION } from './drift-relay.js';

/**
 * Whether a watched update of a RuntimeBootstrapper needs a reconcile (pure), as
 * controller-runtime's GenerationChangedPredicate plus the lifecycle: a spec change (generation),
 * deletion, annotations (force-release, the runtime's domain), or our finalizer taken away by
 * someone else. Our own writes come back as updates and need none: a status write leaves the
 * generation alone, and the finalizer we add is added by the reconcile that goes on anyway (a
 * second one per CR would double the work of onboarding). A relayed drift report (drift-relay.ts)
 * starts a repair of its own instead.
 */
export function needsReconcile(old: RuntimeBootstrapper, next: RuntimeBootstrapper): boolean {
  const o = old.metadata;
  const m = next.metadata;
  if (o.generation !== m.generation) return true;
  if (o.deletionTimestamp !== m.deletionTimestamp) return true;
  if (!isDeepStrictEqual(withoutRelay(o.annotations), withoutRelay(m.annotations))) return true;
  const ours = (rb: RuntimeBootstrapper): boolean => rb.metadata.finalizers?.includes(RTB_FINALIZER) ?? false;
  return ours(old) && !ours(next);
}

function withoutRelay(annotations: Record<string, string> | undefined): Record<string, string> {
  const { [DRIFT_REPORTED_ANNOTATION]: _relayed, ...rest } = annotations ?? {};
  return rest;
}
