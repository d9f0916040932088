import { z } from 'zod';
import { driftEventFor } from './drift-detection.js';
import type { DriftForwarder } from './drift-forwarder.js';

/** What the admission server writes back: an HTTP status and a body. */
export interface ValidationReply {
  readonly status: number;
  readonly body: string;
}

const gvk = z.object({ group: z.string(), version: z.string(), kind: z.string().min(1) });

// Only the envelope is checked: the objects are the API server's, of any kind, and the drift
// decision reads them defensively.
const reviewSchema = z.object({
  apiVersion: z.literal('admission.k8s.io/v1'),
  kind: z.literal('AdmissionReview'),
  request: z.looseObject({
    uid: z.string().min(1),
    kind: gvk,
    name: z.string().optional(),
    namespace: z.string().optional(),
    operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
    object: z.unknown().optional(),
    oldObject: z.unknown().optional(),
    dryRun: z.boolean().optional(),
    options: z.unknown().optional(),
  }),
});

/**
 * The drift webhook's handler: a validating webhook that only observes. It decodes an
 * `admission.k8s.io/v1` AdmissionReview for any resource (400 with the reason when it is
 * not one), hands drift of a managed object to the forwarder, and always allows, echoing the
 * uid. It never waits for the network: `send` only enqueues.
 */
export function handleDriftValidation(
  body: Buffer,
  forwarder: Pick<DriftForwarder, 'send'>,
): ValidationReply {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return { status: 400, body: 'body is not JSON' };
  }
  const parsed = reviewSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first && first.path.length > 0 ? first.path.join('.') : '(root)';
    return {
      status: 400,
      body: `not an admission.k8s.io/v1 AdmissionReview: ${where}: ${first?.message ?? 'invalid'}`,
    };
  }
  const r = parsed.data.request;
  // A dry run persists nothing, so nothing drifted.
  if (r.dryRun !== true) {
    try {
      const event = driftEventFor(r);
      if (event !== undefined) forwarder.send(event);
    } catch {
      // Observing must never block a write in the runtime: a fault here costs one drift event
      // (the forwarder counts and logs its own failures), never the user's request.
    }
  }
  return {
    status: 200,
    body: JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: r.uid, allowed: true },
    }),
  };
}
