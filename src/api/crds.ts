/**
 * The CustomResourceDefinitions shipped in `config/crd/` (the package ships `config/`), parsed
 * so tests and the local landscape can apply them without a YAML step of their own.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

// From src/api/ and from dist/api/ alike, the package root is two levels up.
const CRD_DIR = new URL('../../config/crd/', import.meta.url);

/**
 * Reads and parses `config/crd/<file>` as the API server takes it (`enum`,
 * `x-kubernetes-preserve-unknown-fields`: the wire names, not client-node's model names), for a
 * raw apply (`applyObjects`, `ensureCrds`); throws if it is missing or not a CRD (a broken package).
 */
export function loadCrd(file: string): KubernetesObject {
  const url = new URL(file, CRD_DIR);
  let doc: unknown;
  try {
    doc = parse(readFileSync(url, 'utf8'));
  } catch (cause) {
    throw new Error(`cannot read CRD ${url.pathname}`, { cause });
  }
  const crd = doc as KubernetesObject | null;
  if (crd?.kind !== 'CustomResourceDefinition' || crd.apiVersion !== 'apiextensions.k8s.io/v1') {
    throw new Error(`${url.pathname} is not an apiextensions.k8s.io/v1 CustomResourceDefinition`);
  }
  return crd;
}

/** KIM's Runtime CRD, a faithful subset (`config/crd/runtime.yaml`). */
export function runtimeCrd(): KubernetesObject {
  return loadCrd('runtime.yaml');
}
