/**
 * Whether a source object is usable (pure). A reason names what is wrong and where, never a
 * value: reasons go to logs, events and metrics, and the pull Secret's values are secret.
 */
import { X509Certificate } from 'node:crypto';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ClusterTrustBundle } from '../../api/cluster-trust-bundle.js';
import { parseDocument } from 'yaml';
import { ConfigError, parseWebhookConfig, readWebhookConfig } from '../../api/webhook-config.js';
import { CONFIG_MAP_KEY } from '../../api/webhook-features.js';
import { KIM_MANIFESTS_KEY } from '../../api/runtime-names.js';
import { asJsonObject } from '../../api/json-object.js';
import { scanPemStrict } from '../../pki/pem-scan.js';

const DOCKER_CONFIG_JSON = 'kubernetes.io/dockerconfigjson';
const DOCKER_CFG = 'kubernetes.io/dockercfg';

function decodeJsonObject(base64: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(base64, 'base64').toString('utf8'));
    return asJsonObject(value);
  } catch {
    return undefined;
  }
}

/** Why a pull Secret cannot be used, or undefined if it can. */
export function validatePullSecret(secret: V1Secret): string | undefined {
  const data = secret.data ?? {};
  const type = secret.type ?? 'Opaque';
  if (type === DOCKER_CONFIG_JSON || type === DOCKER_CFG) {
    const key = type === DOCKER_CONFIG_JSON ? '.dockerconfigjson' : '.dockercfg';
    const raw = data[key];
    if (raw === undefined || raw === '') return `type ${type} needs a non-empty key ${key}`;
    const parsed = decodeJsonObject(raw);
    if (parsed === undefined) return `key ${key} is not a JSON object`;
    if (type === DOCKER_CONFIG_JSON) {
      const auths = parsed.auths;
      if (typeof auths !== 'object' || auths === null || Array.isArray(auths))
        return `key ${key} has no "auths" object`;
    }
    return undefined;
  }
  if (Object.keys(data).length === 0) return 'the Secret holds no data';
  return undefined;
}

/** Why a webhook ConfigMap cannot be used (it must pass `parseWebhookConfig`), or undefined. */
export function validateConfigMap(cm: V1ConfigMap, key = CONFIG_MAP_KEY): string | undefined {
  const text = cm.data?.[key];
  if (text === undefined) return `key ${key} is missing`;
  try {
    parseWebhookConfig(text);
    return undefined;
  } catch (err) {
    // ConfigError lists paths and rules, never the offending values.
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    return 'the config cannot be parsed';
  }
}

/**
 * What a usable webhook ConfigMap holds that upstream accepts but ours ignores or reads
 * differently (`readWebhookConfig`'s warnings, as `path: message`); [] when none or when the
 * ConfigMap is not usable (that is a problem, reported by {@link validateConfigMap}).
 */
export function configMapWarnings(cm: V1ConfigMap, key = CONFIG_MAP_KEY): readonly string[] {
  const text = cm.data?.[key];
  if (text === undefined) return [];
  try {
    return readWebhookConfig(text).warnings.map((w) => `${w.path}: ${w.message}`);
  } catch {
    return [];
  }
}

/**
 * Why KIM's manifests ConfigMap cannot be used, or undefined. KIM checks it the same way before
 * it installs (its `verifyManifests`): the key must be in `data`, and every piece of the text
 * split on `---` (anywhere, as KIM splits it) must be YAML. Signalling KIM with manifests it
 * refuses would fail every Runtime, so such a ConfigMap is held like any other unusable source.
 * This is not the webhook config: nothing else of it is read.
 */
export function validateManifestsConfigMap(cm: V1ConfigMap): string | undefined {
  const text = cm.data?.[KIM_MANIFESTS_KEY];
  if (text === undefined) return `key ${KIM_MANIFESTS_KEY} is missing`;
  let index = 0;
  for (const piece of text.split('---')) {
    if (piece.trim() === '') continue;
    index++;
    if (parseDocument(piece).errors.length > 0)
      return `key ${KIM_MANIFESTS_KEY}: document ${index} (split on ---) is not valid YAML`;
  }
  return undefined;
}

/**
 * The largest `spec.trustBundle` read: the API server's own limit on the field (1 MiB,
 * `certificates.MaxTrustBundleSize`), so no bundle it stores is refused for its size alone.
 */
export const TRUST_BUNDLE_MAX_BYTES = 1024 * 1024;

/**
 * Why a ClusterTrustBundle cannot be used, or undefined: `spec.trustBundle` must hold at least one
 * certificate, and every PEM block in it must be a certificate that parses (text between blocks
 * without boundary lines is allowed, as the API server allows it). Scanned in linear time
 * (../../pki/pem-scan.ts) after a size check; the first bad block ends the check.
 */
export function validateClusterTrustBundle(ctb: ClusterTrustBundle): string | undefined {
  const pem = ctb.spec.trustBundle;
  if (typeof pem !== 'string') return 'spec.trustBundle is not a string';
  // Every watch event of the bundle (a resync, a metadata update) asks again; parsing a full
  // bundle of about a thousand certificates takes a while, so the last answer is kept.
  if (lastBundle?.pem !== pem) lastBundle = { pem, problem: bundleProblem(pem) };
  return lastBundle.problem;
}

let lastBundle: { readonly pem: string; readonly problem: string | undefined } | undefined;

function bundleProblem(pem: string): string | undefined {
  const field = 'spec.trustBundle';
  if (pem.length > TRUST_BUNDLE_MAX_BYTES)
    return `${field} is larger than ${TRUST_BUNDLE_MAX_BYTES} bytes (the API server's limit)`;
  const scan = scanPemStrict(pem);
  if (!scan.ok) return `${field}: ${scan.problem}`;
  let index = 0;
  for (const block of scan.blocks) {
    index++;
    if (block.label !== 'CERTIFICATE') return `${field}: PEM block ${index} is not a CERTIFICATE`;
    try {
      new X509Certificate(block.text);
    } catch {
      return `${field}: certificate ${index} cannot be parsed`;
    }
  }
  return index === 0 ? `${field} holds no certificate` : undefined;
}
