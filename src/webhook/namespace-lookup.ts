import type { V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { statusCodeOf } from '../kube/kube-errors.js';
import type { Reflector } from '../kube/reflector.js';
import type { Eventually } from './admission-handler.js';

/** The Namespace read of the lookup (client-node's `CoreV1Api` has it with this shape). */
export interface NamespaceReads {
  readNamespace(param: { name: string }): Promise<V1Namespace>;
}

/**
 * Namespace annotations for feature selection: from the namespace cache, with one GET as the
 * fallback for a namespace created a moment ago that the watch has not delivered yet (the first
 * Pod of a new namespace often arrives right behind it).
 */
export function namespaceAnnotationLookup(
  namespaces: Reflector<V1Namespace>,
  core: NamespaceReads,
  logger: Logger,
): (name: string) => Eventually<Readonly<Record<string, string>> | undefined> {
  const read = async (name: string): Promise<Readonly<Record<string, string>> | undefined> => {
    try {
      const ns = await core.readNamespace({ name });
      return ns.metadata?.annotations ?? NO_ANNOTATIONS;
    } catch (error) {
      if (statusCodeOf(error) !== 404) logger.warn({ namespace: name, err: error }, 'cannot read namespace');
      return undefined;
    }
  };
  return (name) => {
    const cached = namespaces.store.get(name);
    return cached ? (cached.metadata?.annotations ?? NO_ANNOTATIONS) : read(name);
  };
}

const NO_ANNOTATIONS: Readonly<Record<string, string>> = Object.freeze({});
