/**
 * The CustomResourceDefinitions shipped in `config/crd/` (the package ships `config/`), parsed
 * so tests and the local landscape can apply them without a YAML step of their own.
 */
import { loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';

/** A CRD file is missing, unreadable or not a CustomResourceDefinition. */
export class CrdLoadError extends Error {
  override readonly name = 'CrdLoadError';
}

// From src/api/ and from dist/api/ alike, the package root is two levels up.
const CRD_DIR = new URL('../../config/crd/', import.meta.url);

/**
 * Reads and parses `config/crd/<file>` into client-node's model (so `enum` is `_enum`, as the
 * type says, and the client serialises it back correctly); throws {@link CrdLoadError} if it
 * is not a CRD.
 */
export function loadCrd(file: string): V1CustomResourceDefinition {
  const url = new URL(file, CRD_DIR);
  let doc: unknown;
  try {
    doc = loadYaml(readFileSync(url, 'utf8'));
  } catch (cause) {
    throw new CrdLoadError(`cannot read CRD ${url.pathname}`, { cause });
  }
  const crd = doc as Partial<V1CustomResourceDefinition> | null;
  if (crd?.kind !== 'CustomResourceDefinition' || crd.apiVersion !== 'apiextensions.k8s.io/v1') {
    throw new CrdLoadError(`${url.pathname} is not an apiextensions.k8s.io/v1 CustomResourceDefinition`);
  }
  return crd as V1CustomResourceDefinition;
}

/** KIM's Runtime CRD, a faithful subset (`config/crd/runtime.yaml`). */
export function runtimeCrd(): V1CustomResourceDefinition {
  return loadCrd('runtime.yaml');
}
