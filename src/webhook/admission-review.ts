import { z } from 'zod';
import type { PatchOperation } from '../mutation/patch-builder.js';
import type { Pod } from '../mutation/pod.js';

/** The request did not carry a usable `admission.k8s.io/v1` AdmissionReview (HTTP 400). */
export class AdmissionDecodeError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'AdmissionDecodeError';
  }
}

/**
 * Longest accepted strings of the envelope: what the API server can send (a UID is a UUID; a
 * namespace a DNS label of at most 63 characters; names, groups and resources DNS subdomains of
 * at most 253). They reach logs, API paths and the answer: a request with a namespace of
 * megabytes would otherwise be copied into each of them (what that cost: docs/webhook-hardening.md).
 */
export const ENVELOPE_LIMITS = { uid: 128, namespace: 63, name: 253 } as const;

const shortName = z.string().max(ENVELOPE_LIMITS.name);

const groupVersionResource = z.object({ group: shortName, version: shortName, resource: shortName });

// Only the envelope is validated here; the Pod itself is the API server's, already validated
// and defaulted, and the mutations read it defensively.
const reviewSchema = z.object({
  apiVersion: z.literal('admission.k8s.io/v1'),
  kind: z.literal('AdmissionReview'),
  request: z.looseObject({
    uid: z.string().min(1).max(ENVELOPE_LIMITS.uid),
    resource: groupVersionResource,
    subResource: shortName.optional(),
    name: shortName.optional(),
    namespace: z.string().max(ENVELOPE_LIMITS.namespace).optional(),
    operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
    object: z.record(z.string(), z.unknown()).nullable().optional(),
    oldObject: z.record(z.string(), z.unknown()).nullable().optional(),
    dryRun: z.boolean().optional(),
  }),
});

/** The parts of an AdmissionReview request the webhook uses. */
export interface AdmissionRequest {
  readonly uid: string;
  readonly resource: { readonly group: string; readonly version: string; readonly resource: string };
  readonly subResource: string;
  readonly name: string;
  readonly namespace: string;
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  readonly object: Pod | undefined;
  readonly oldObject: Pod | undefined;
  readonly dryRun: boolean;
}

/** Parses and validates a request body; throws AdmissionDecodeError with the reason. */
export function decodeAdmissionReview(body: Buffer | string): AdmissionRequest {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch (cause) {
    throw new AdmissionDecodeError(`body is not JSON: ${(cause as Error).message}`, { cause });
  }
  return decodeEnvelope(json);
}

/** Validates the envelope of parsed JSON: the request, or AdmissionDecodeError with zod's reason. */
function decodeEnvelope(json: unknown): AdmissionRequest {
  const parsed = reviewSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first && first.path.length > 0 ? first.path.join('.') : '(root)';
    throw new AdmissionDecodeError(
      `not an admission.k8s.io/v1 AdmissionReview: ${where}: ${first?.message ?? 'invalid'}`,
      { cause: parsed.error },
    );
  }
  const r = parsed.data.request;
  return {
    uid: r.uid,
    resource: r.resource,
    subResource: r.subResource ?? '',
    name: r.name ?? '',
    namespace: r.namespace ?? '',
    operation: r.operation,
    object: asPod(r.object),
    oldObject: asPod(r.oldObject),
    dryRun: r.dryRun ?? false,
  };
}

/** What the webhook answers. */
export interface AdmissionAnswer {
  readonly uid: string;
  readonly patch?: readonly PatchOperation[];
  readonly warnings?: readonly string[];
  /** Set only when configured to fail closed: the request is refused with this message. */
  readonly denied?: string;
}

/**
 * Encodes an AdmissionReview response: allowed with a JSONPatch when there is one, or denied.
 * Printed piece by piece, byte for byte what `JSON.stringify` of the whole review would give,
 * without a second pass over the base64 patch (which needs no escaping).
 */
export function encodeAdmissionResponse(answer: AdmissionAnswer): string {
  let out = `${REVIEW_HEAD}{"uid":${JSON.stringify(answer.uid)},"allowed":${String(answer.denied === undefined)}`;
  if (answer.denied !== undefined)
    out += `,"status":${JSON.stringify({ code: 500, message: answer.denied })}`;
  if (answer.patch && answer.patch.length > 0) {
    const patch = Buffer.from(JSON.stringify(answer.patch)).toString('base64');
    out += `,"patchType":"JSONPatch","patch":"${patch}"`;
  }
  // The API server shows warnings to the client; it limits their count and length itself,
  // but a bounded list keeps our answers small.
  if (answer.warnings && answer.warnings.length > 0) {
    out += `,"warnings":${JSON.stringify(answer.warnings.slice(0, 10).map((w) => w.slice(0, 240)))}`;
  }
  return `${out}}}`;
}

// The envelope around every response.
const REVIEW_HEAD = '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":';

// The schema proved it is an object; its fields are the API server's, read defensively.
function asPod(value: Record<string, unknown> | null | undefined): Pod | undefined {
  return value ?? undefined;
}
