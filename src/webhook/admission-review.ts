import { z } from 'zod';
import type { PatchOperation } from '../mutation/patch-builder.js';
import type { Pod } from '../mutation/pod.js';
import { isJsonObject } from '../api/json-object.js';

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
 * megabytes would otherwise be copied into each of them (measured: 372 MB for one of 3 MB).
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
  return checkEnvelope(json) ?? decodeWithSchema(json);
}

const OPERATIONS: ReadonlySet<unknown> = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

const isOptionalString = (v: unknown, max: number): v is string | undefined =>
  v === undefined || (typeof v === 'string' && v.length <= max);
const isShortString = (v: unknown): v is string => typeof v === 'string' && v.length <= ENVELOPE_LIMITS.name;

/**
 * The Pod of `object`/`oldObject` as it stands: unlike the schema, which would copy it, minus
 * any `__proto__` member (left to the schema, so both paths answer the same).
 */
function podOf(v: unknown): Pod | undefined | false {
  if (v === undefined || v === null) return undefined;
  return isJsonObject(v) && !Object.hasOwn(v, '__proto__') ? v : false;
}

/**
 * The envelope check on the hot path: accepts exactly what {@link reviewSchema} accepts (a zod
 * parse costs several microseconds and copies the Pod), and returns undefined for anything
 * else, which {@link decodeWithSchema} then refuses with zod's reason.
 */
function checkEnvelope(json: unknown): AdmissionRequest | undefined {
  if (!isJsonObject(json) || json.apiVersion !== 'admission.k8s.io/v1' || json.kind !== 'AdmissionReview')
    return undefined;
  const r = json.request;
  if (!isJsonObject(r) || typeof r.uid !== 'string' || r.uid.length < 1 || r.uid.length > ENVELOPE_LIMITS.uid)
    return undefined;
  const gvr = r.resource;
  if (
    !isJsonObject(gvr) ||
    !isShortString(gvr.group) ||
    !isShortString(gvr.version) ||
    !isShortString(gvr.resource)
  )
    return undefined;
  const { subResource, name, namespace, operation, dryRun } = r;
  if (
    !isOptionalString(subResource, ENVELOPE_LIMITS.name) ||
    !isOptionalString(name, ENVELOPE_LIMITS.name) ||
    !isOptionalString(namespace, ENVELOPE_LIMITS.namespace)
  )
    return undefined;
  if (!OPERATIONS.has(operation) || (dryRun !== undefined && typeof dryRun !== 'boolean')) return undefined;
  const object = podOf(r.object);
  const oldObject = podOf(r.oldObject);
  if (object === false || oldObject === false) return undefined;
  return {
    uid: r.uid,
    resource: { group: gvr.group, version: gvr.version, resource: gvr.resource },
    subResource: subResource ?? '',
    name: name ?? '',
    namespace: namespace ?? '',
    operation: operation as AdmissionRequest['operation'],
    object,
    oldObject,
    dryRun: dryRun ?? false,
  };
}

/**
 * The reference decoder (zod): the reason of a refusal, or the request when the fast check was
 * unsure. Exported for the test that holds both paths to the same answers.
 */
export function decodeWithSchema(json: unknown): AdmissionRequest {
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

/**
 * The encoded response as a function of its uid: an answer encoded once and reused. The bytes
 * are those of {@link encodeAdmissionResponse}, assembled as a Buffer so that the socket write
 * neither flattens nor re-encodes a string.
 */
export function admissionResponseTemplate(answer: Omit<AdmissionAnswer, 'uid'>): (uid: string) => Buffer {
  const headText = `${REVIEW_HEAD}{"uid":`;
  const head = Buffer.from(headText);
  const tail = Buffer.from(encodeAdmissionResponse({ ...answer, uid: '' }).slice(headText.length + 2));
  return (uid) => {
    const quoted = JSON.stringify(uid);
    const quotedBytes = Buffer.byteLength(quoted);
    const out = Buffer.allocUnsafe(head.length + quotedBytes + tail.length);
    head.copy(out, 0);
    out.write(quoted, head.length);
    tail.copy(out, head.length + quotedBytes);
    return out;
  };
}

// The envelope around every response.
const REVIEW_HEAD = '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":';

// The envelope check proved it is an object; its fields are the API server's, read defensively.
function asPod(value: Record<string, unknown> | null | undefined): Pod | undefined {
  return value ?? undefined;
}
