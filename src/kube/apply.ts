import {
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { kubeRequest } from './kube-request.js';

/** Our field manager for server-side apply. */
export const FIELD_MANAGER = 'rt-bootstrapper';

/** An object could not be applied; names the object. */
export class ApplyError extends Error {
  constructor(
    message: string,
    readonly object: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ApplyError';
  }
}

// One object API per KubeConfig: it caches API discovery, which would otherwise cost three GETs
// on every call (and a runtime client lives as long as its kubeconfig is unchanged).
const objectApis = new WeakMap<KubeConfig, KubernetesObjectApi>();

/** The object API of `kc`, made once per KubeConfig (API discovery is cached inside it). */
export function objectApiFor(kc: KubeConfig): KubernetesObjectApi {
  let api = objectApis.get(kc);
  if (!api) {
    api = KubernetesObjectApi.makeApiClient(kc);
    objectApis.set(kc, api);
  }
  return api;
}

/** `kind namespace/name` of an object, for messages. */
export function describeObject(o: KubernetesObject): string {
  const ns = o.metadata?.namespace ? `${o.metadata.namespace}/` : '';
  return `${o.kind ?? '?'} ${ns}${o.metadata?.name ?? '?'}`;
}

/**
 * Only for its paths: client-node's object API resolves kind → resource (its discovery is
 * cached), but its writes serialize the object through the kind's model, which reads the model's
 * field names and silently drops JSON fields named otherwise there (a NetworkPolicy rule's `from`
 * is `_from` in the model, a schema's `enum` is `_enum`). {@link applyJsonObjects} sends objects
 * as they are instead.
 */
class ObjectPaths extends KubernetesObjectApi {
  /** The object API of `kc` that only computes paths. */
  static for(kc: KubeConfig): ObjectPaths {
    const paths = kc.makeApiClient(ObjectPaths);
    paths.setDefaultNamespace(kc);
    return paths;
  }

  /** The path of `o` (namespaced kinds without a namespace go to the kubeconfig's default). */
  pathOf(o: KubernetesObject): Promise<string> {
    // specUriPath fills in defaults on the object it is given.
    return this.specUriPath({ ...o, metadata: { ...o.metadata } }, 'patch');
  }
}

const objectPaths = new WeakMap<KubeConfig, ObjectPaths>();

function pathsFor(kc: KubeConfig): ObjectPaths {
  let paths = objectPaths.get(kc);
  if (!paths) {
    paths = ObjectPaths.for(kc);
    objectPaths.set(kc, paths);
  }
  return paths;
}

/** Applies each object with `send`, in order, stopping at the first failure (named in the error). */
async function applyInOrder(
  objects: readonly KubernetesObject[],
  send: (o: KubernetesObject) => Promise<KubernetesObject>,
): Promise<KubernetesObject[]> {
  const applied: KubernetesObject[] = [];
  for (const o of objects) {
    try {
      applied.push(await send(o));
    } catch (cause) {
      throw new ApplyError(`cannot apply ${describeObject(o)}`, describeObject(o), { cause });
    }
  }
  return applied;
}

/**
 * Server-side applies objects in order under our field manager (force: we own these fields).
 * The objects are in client-node's model shape (serialized through the kind's model: typed
 * models such as our CRDs, whose schemas use the models' `x_kubernetes_…` and `_enum`); plain API
 * JSON, such as the rendered manifests, goes through {@link applyJsonObjects}.
 * Stops at the first failure, so an order such as "backend before registration" holds.
 */
export function applyObjects(
  kc: KubeConfig,
  objects: readonly KubernetesObject[],
  fieldManager = FIELD_MANAGER,
): Promise<KubernetesObject[]> {
  const api = objectApiFor(kc);
  return applyInOrder(objects, (o) =>
    api.patch(o, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply),
  );
}

/**
 * Like {@link applyObjects}, for objects that are plain API JSON (what the renderers produce, e.g.
 * a NetworkPolicy's `from`): each is sent as the JSON it is, never through client-node's models.
 */
export function applyJsonObjects(
  kc: KubeConfig,
  objects: readonly KubernetesObject[],
  fieldManager = FIELD_MANAGER,
): Promise<KubernetesObject[]> {
  const paths = pathsFor(kc);
  return applyInOrder(objects, async (o) =>
    kubeRequest<KubernetesObject>(kc, {
      method: 'PATCH',
      path: await paths.pathOf(o),
      query: { fieldManager, force: true },
      body: o,
      // JSON is YAML: the API server takes an apply patch in either.
      contentType: 'application/apply-patch+yaml',
    }),
  );
}
