import type { WatchEvent } from './watch-event.js';

/** The parts of an admission request that decide whether it is drift. */
export interface DriftRequest {
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  readonly kind: { readonly group: string; readonly version: string; readonly kind: string };
  readonly namespace?: string;
  readonly name?: string;
  readonly object?: unknown;
  readonly oldObject?: unknown;
  /** `request.options`: Create/Update/Patch/DeleteOptions (not read: a field manager proves nothing). */
  readonly options?: unknown;
}

/**
 * The fields that make up an object's content, per kind we manage. Everything else (labels,
 * annotations, managedFields, resourceVersion, …) changes without changing what Pods see.
 * `stringData` is included for Secrets although the API server folds it into `data` before
 * admission: if a future version did not, a write through it would still count.
 */
const CONTENT_FIELDS: Readonly<Record<string, readonly string[]>> = {
  '/Secret': ['data', 'stringData', 'type'],
  '/ConfigMap': ['data', 'binaryData'],
  'certificates.k8s.io/ClusterTrustBundle': ['spec'],
};

/**
 * Decides whether an admission request is drift of a managed object and returns the event to
 * forward: always for DELETE, for UPDATE only when the content changed, never for CREATE or
 * CONNECT, never for other kinds. Pure; reads `object`/`oldObject` defensively.
 */
export function driftEventFor(req: DriftRequest): WatchEvent | undefined {
  const fields = CONTENT_FIELDS[`${req.kind.group}/${req.kind.kind}`];
  if (fields === undefined) return undefined;
  // No exception for a field manager: any client can name ours. The registration's matchConditions
  // keep the KCP's and the webhook's own writes away by the user the API server authenticated.
  if (req.operation === 'UPDATE') {
    // Without the old object a change cannot be ruled out; a needless re-sync is cheap,
    // a missed drift is not.
    if (isRecord(req.oldObject) && isRecord(req.object) && sameContent(req.object, req.oldObject, fields)) {
      return undefined;
    }
  } else if (req.operation !== 'DELETE') {
    return undefined;
  }
  // On DELETE `object` is null and the old one carries the metadata.
  const meta = metadataOf(req.object) ?? metadataOf(req.oldObject);
  const name = nonEmpty(req.name) ?? nonEmpty(meta?.name);
  if (name === undefined) return undefined;
  const namespace = nonEmpty(req.namespace) ?? nonEmpty(meta?.namespace) ?? '';
  return {
    watched: { Namespace: namespace, Name: name },
    watchedGvk: { group: req.kind.group, version: req.kind.version, kind: req.kind.kind },
  };
}

function sameContent(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
  fields: readonly string[],
): boolean {
  return fields.every((f) => deepEqual(normalise(a[f]), normalise(b[f])));
}

// The API server omits empty maps and strings (omitempty), but a client-built object may carry
// them; both spell "nothing", so they compare equal.
function normalise(value: unknown): unknown {
  if (value === null || value === '') return undefined;
  if (isRecord(value) && Object.keys(value).length === 0) return undefined;
  return value;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isRecord(a) && isRecord(b) && !Array.isArray(b)) {
    const keysA = Object.keys(a);
    if (keysA.length !== Object.keys(b).length) return false;
    return keysA.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

function metadataOf(obj: unknown): { name?: unknown; namespace?: unknown } | undefined {
  if (!isRecord(obj)) return undefined;
  const meta = obj.metadata;
  return isRecord(meta) ? meta : undefined;
}

function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
