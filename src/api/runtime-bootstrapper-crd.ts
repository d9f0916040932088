import type { KubernetesObject } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

// config/ ships with the package, beside src/ and dist/.
const file = new URL('../../config/crd/runtimebootstrapper.yaml', import.meta.url);

/** The RuntimeBootstrapper CustomResourceDefinition, as shipped in config/crd/. */
export function runtimeBootstrapperCrd(): KubernetesObject {
  return parse(readFileSync(file, 'utf8')) as KubernetesObject;
}
