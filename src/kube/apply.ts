import {
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';

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
 * Server-side applies objects in order under our field manager (force: we own these fields).
 * Stops at the first failure, so an order such as "backend before registration" holds.
 */
export async function applyObjects(
  kc: KubeConfig,
  objects: readonly KubernetesObject[],
  fieldManager = FIELD_MANAGER,
): Promise<KubernetesObject[]> {
  const api = objectApiFor(kc);
  const applied: KubernetesObject[] = [];
  for (const o of objects) {
    try {
      applied.push(
        await api.patch(o, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply),
      );
    } catch (cause) {
      throw new ApplyError(`cannot apply ${describeObject(o)}`, describeObject(o), { cause });
    }
  }
  return applied;
}
