/**
 * The serving-certificate state of the per-runtime machine: read the Secret and our webhook
 * configurations, plan, write ONE step, and come back to plan again from what the runtime now
 * holds (as the write's answer says it, without a read; after a 409, read again), until the plan
 * says wait; then record when to look again (the settle time, the overlap's end) and go on. Each step is safe on its own, so a reconcile that stops anywhere
 * leaves a runtime whose admission calls succeed.
 */
import { statusCodeOf } from '../../kube/kube-errors.js';
import { ServingIssuerError, type ServingStep } from '../../serving-cert/serving-secret-plan.js';
import {
  MAX_SERVING_WAIT_MS,
  needsServerLook,
  nextServingStep,
  waitOutcome,
  type ServingView,
} from './serving-certificate.js';
import { failed, firstLine, goTo, type Found, type StateFn } from './state-context.js';

/**
 * Protocol writes per reconcile: a takeover or a CA change takes four before it must wait (CA,
 * caBundle, bookkeeping, certificate); more means another writer keeps undoing ours.
 */
export const MAX_SERVING_WRITES = 8;
/** How soon a reconcile that ran out of protocol writes comes back. */
const BUSY_RETRY_MS = 1_000;

/**
 * The state; `next` follows once the plan waits. With `trustKnown`, a pass that (re)applied
 * nothing and is not forced skips the reads while an earlier pass of this process found the
 * certificate current (`ctx.servingCurrentUntil`): a new source set costs its applies alone.
 * Tampering is reported by the drift channel, whose repair forces a full pass.
 */
export function servingCertificateState(next: StateFn, o: { readonly trustKnown?: boolean } = {}): StateFn {
  const state: StateFn = async (ctx, found) => {
    const now = ctx.serving.now();
    const until = ctx.servingCurrentUntil;
    if (
      o.trustKnown === true &&
      until !== undefined &&
      now < until &&
      !found.wrote &&
      !ctx.forceResync &&
      ctx.status.get('ServingCertificate')?.reason === 'Current'
    ) {
      return goTo(next, {
        ...wakeAfter(found, Math.min(until - now, MAX_SERVING_WAIT_MS)),
        servingCheckedUntil: until,
      });
    }
    let view: ServingView;
    let step: ServingStep;
    // Taken once: whatever follows plans from a read or from its own write's answer.
    const taken: Found = { ...found, servingAnswered: undefined };
    try {
      // Right after our own write its answer is what the runtime holds: no read to learn it again.
      view = found.servingAnswered ?? (await ctx.ops.readServing());
      if (needsServerLook(view, ctx.serving))
        view = { ...view, foreignServers: await ctx.ops.readForeignServers() };
      step = nextServingStep(view, ctx.serving);
    } catch (error) {
      const reason = error instanceof ServingIssuerError ? 'IssuerUnusable' : 'ReadFailed';
      return failed(ctx, error, 'ServingCertificate', 'False', reason);
    }
    if (step.kind === 'wait') {
      const w = waitOutcome(step, now, ctx.serving.policy);
      ctx.status.condition('ServingCertificate', 'True', w.reason, w.message);
      return goTo(next, {
        ...wakeAfter(taken, w.requeueAfterMs),
        servingView: view,
        servingCheckedUntil: w.reason === 'Current' ? now + w.requeueAfterMs : taken.servingCheckedUntil,
      });
    }
    if (found.servingWrites >= MAX_SERVING_WRITES) {
      ctx.status.condition(
        'ServingCertificate',
        'True',
        'Rotating',
        `${step.reason}; ${MAX_SERVING_WRITES} writes in one pass, continuing in the next`,
      );
      return goTo(next, wakeAfter(taken, BUSY_RETRY_MS));
    }
    let answered: ServingView;
    try {
      answered =
        step.kind === 'write-bundle'
          ? await ctx.ops.writeCaBundle(view, step.bundle)
          : { ...view, secret: await ctx.ops.writeServingSecret(view.secret, step.write) };
    } catch (error) {
      // Someone wrote since we read: plan again from what is there now.
      if (statusCodeOf(error) === 409)
        return goTo(state, { ...taken, servingWrites: taken.servingWrites + 1 });
      return failed(
        ctx,
        error,
        'ServingCertificate',
        'False',
        'WriteFailed',
        `${step.reason}: ${firstLine(error)}`,
      );
    }
    return goTo(state, { ...taken, servingWrites: taken.servingWrites + 1, servingAnswered: answered });
  };
  return state;
}

/** `found` with the pass asked to come back after `ms` at the latest. */
function wakeAfter(found: Found, ms: number): Found {
  return { ...found, wakeAfterMs: found.wakeAfterMs === undefined ? ms : Math.min(found.wakeAfterMs, ms) };
}
