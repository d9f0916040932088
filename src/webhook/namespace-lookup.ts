import type { V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { statusCodeOf } from '../kube/kube-errors.js';
import type { Reflector } from '../kube/reflector.js';
import type { LogRateLimit } from '../telemetry/log-rate-limit.js';
import type { MissingNamespaces } from './missing-namespaces.js';

/** The Namespace read of the lookup (client-node's `CoreV1Api` has it with this shape). */
export interface NamespaceReads {
  readNamespace(param: { name: string }): Promise<V1Namespace>;
}

/**
 * Namespace annotations for feature selection: from the namespace cache, with one GET as the
 * fallback for a namespace created a moment ago that the watch has not delivered yet (the first
 * Pod of a new namespace often arrives right behind it). A namespace the GET did not find is
 * remembered for a few seconds (`missing`), and concurrent lookups of one name share one GET, so
 * requests naming a namespace that does not exist cost no API call each.
 */
export function namespaceAnnotationLookup(
  namespaces: Pick<Reflector<V1Namespace>, 'store'>,
  core: NamespaceReads,
  missing: MissingNamespaces,
  logger: Logger,
  limit: LogRateLimit,
): (name: string) => Promise<Readonly<Record<string, string>> | undefined> {
  const reading = new Map<string, Promise<Readonly<Record<string, string>> | undefined>>();
  const cachedAnnotations = (name: string): Readonly<Record<string, string>> | undefined => {
    const cached = namespaces.store.get(name);
    return cached ? (cached.metadata?.annotations ?? NO_ANNOTATIONS) : undefined;
  };
  const read = async (name: string): Promise<Readonly<Record<string, string>> | undefined> => {
    try {
      const ns = await core.readNamespace({ name });
      return ns.metadata?.annotations ?? NO_ANNOTATIONS;
    } catch (error) {
      if (statusCodeOf(error) === 404) missing.remember(name);
      else limit.warn(logger, { namespace: name, err: error }, 'cannot read namespace');
      // The watch may have delivered the namespace while the read waited.
      return cachedAnnotations(name);
    }
  };
  return async (name) => {
    const cached = cachedAnnotations(name);
    if (cached) return cached;
    if (missing.has(name)) return undefined;
    let pending = reading.get(name);
    if (!pending) {
      pending = read(name).finally(() => {
        reading.delete(name);
      });
      reading.set(name, pending);
    }
    return pending;
  };
}

const NO_ANNOTATIONS: Readonly<Record<string, string>> = Object.freeze({});
