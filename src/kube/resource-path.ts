/**
 * REST paths of objects, without API discovery (pure). The controller writes a handful of fixed
 * kinds to thousands of runtimes; client-node's object API discovers every group's resources per
 * client to find a path (three GETs and about 60 resource objects held per runtime). The path
 * follows from the object itself: its apiVersion, its namespace (set exactly for namespaced
 * kinds, as every object we write has it) and the kind's plural, guessed as the API machinery's
 * `UnsafeGuessKindToResource` does, which is right for every built-in kind and for CRDs whose
 * plural follows the convention.
 */

/** What a path is made from. */
export interface ObjectRef {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
}

/** An object whose path cannot be told (no kind, apiVersion or name). */
export class ResourcePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResourcePathError';
  }
}

/** The plural resource name of a kind: `Deployment` → `deployments`, `NetworkPolicy` → `networkpolicies`. */
export function pluralOf(kind: string): string {
  const singular = kind.toLowerCase();
  if (singular === 'endpoints') return singular;
  if (singular.endsWith('s')) return `${singular}es`;
  if (singular.endsWith('y')) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}

/** `/api/v1` or `/apis/<group>/<version>`. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** The collection of a kind, in `namespace` (undefined: cluster-scoped, or across all namespaces). */
export function collectionPath(apiVersion: string, kind: string, namespace?: string): string {
  const ns =
    namespace !== undefined && namespace !== '' ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${groupVersionPath(apiVersion)}${ns}/${pluralOf(kind)}`;
}

/** The path of one object, e.g. `/apis/apps/v1/namespaces/kyma-system/deployments/x`. */
export function objectPath(o: ObjectRef): string {
  const { apiVersion, kind } = o;
  const { name, namespace } = o.metadata ?? {};
  if (!apiVersion || !kind || !name)
    throw new ResourcePathError(
      `an object needs apiVersion, kind and name for its path: ${describeObject(o)}`,
    );
  return `${collectionPath(apiVersion, kind, namespace)}/${encodeURIComponent(name)}`;
}

/** `kind namespace/name` of an object, for messages. */
export function describeObject(o: ObjectRef): string {
  const ns = o.metadata?.namespace ? `${o.metadata.namespace}/` : '';
  return `${o.kind ?? '?'} ${ns}${o.metadata?.name ?? '?'}`;
}
