import { z } from 'zod';

/** Where the runtime side POSTs WatchEvents on the KCP listener. */
export const WATCH_EVENT_PATH = '/v2/rt-bootstrapper/event';

/**
 * A drift event (DESIGN §6), the Runtime Watcher's wire format: which object changed in the
 * runtime. The capitalised `Namespace`/`Name` are the upstream Go struct's JSON names
 * (`client.ObjectKey` without tags), kept so a Runtime Watcher peer can talk to us.
 */
export interface WatchEvent {
  readonly watched: { readonly Namespace: string; readonly Name: string };
  readonly watchedGvk: { readonly group: string; readonly version: string; readonly kind: string };
}

/** A body that is not a valid WatchEvent; `field` names the first offending field (HTTP 400). */
export class WatchEventError extends Error {
  override readonly name = 'WatchEventError';

  constructor(
    message: string,
    readonly field: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

// Kubernetes names are ASCII without spaces; refusing control characters and bounding the
// lengths keeps whatever the peer sends harmless in logs and in the controller's queue keys.
const printable = /^[\x21-\x7e]*$/;
const text = (max: number) => z.string().max(max).regex(printable, 'must be printable ASCII without spaces');
const required = (max: number) => text(max).min(1, 'must not be empty');

// Unknown fields are ignored (and stripped), as Go's json decoder does, so a newer peer can add some.
const watchEventSchema = z.object({
  watched: z.object({
    // Empty for cluster-scoped objects such as ClusterTrustBundles.
    Namespace: text(63),
    Name: required(253),
  }),
  watchedGvk: z.object({
    // Empty for the core group (Secrets, ConfigMaps).
    group: text(253),
    version: required(63),
    kind: required(63),
  }),
});

/** Parses and validates a request body; throws WatchEventError naming the field. */
export function parseWatchEvent(body: Buffer | string): WatchEvent {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch (cause) {
    throw new WatchEventError('not a WatchEvent: (root): body is not JSON', '(root)', { cause });
  }
  const parsed = watchEventSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first && first.path.length > 0 ? first.path.join('.') : '(root)';
    throw new WatchEventError(`not a WatchEvent: ${field}: ${first?.message ?? 'invalid'}`, field, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** The canonical JSON of an event (fixed key order): the wire body and the de-duplication key. */
export function encodeWatchEvent(event: WatchEvent): string {
  const { watched, watchedGvk } = event;
  return JSON.stringify({
    watched: { Namespace: watched.Namespace, Name: watched.Name },
    watchedGvk: { group: watchedGvk.group, version: watchedGvk.version, kind: watchedGvk.kind },
  });
}
