/**
 * Content versions of the sources (pure). A version names the content only — Secret
 * `type` + `data`, ConfigMap `data` + `binaryData`, ClusterTrustBundle `spec` — so metadata
 * updates, relists and restarts never change it, and it is stable across key order.
 *
 * Versions appear in logs, metric labels, events and annotations, so they must not let anyone
 * recover what they name. The ConfigMap and the trust bundle are public, a plain SHA-256 is
 * enough; the pull Secret may hold a guessable password, so its version is a slow
 * PBKDF2-HMAC-SHA256 digest, which makes guessing it from the version as slow as guessing it at
 * all. PBKDF2 (NIST SP 800-132) rather than the memory-hard scrypt: scrypt is no approved
 * algorithm, and the FIPS provider (docs/fips.md) has none.
 */
import { createHash, pbkdf2Sync } from 'node:crypto';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ClusterTrustBundle } from '../../api/cluster-trust-bundle.js';
import { setVersionOf, versionDigest } from '../../api/set-version.js';
import type { SourceKind, SourceVersions } from './source-watcher.js';

/** Bytes of the Secret's version: as many hex digits as the others' (../../api/set-version.ts). */
const SECRET_VERSION_BYTES = 8;
/** PBKDF2 iterations of the Secret's version (tens of ms): paid once per content change. */
const SECRET_ITERATIONS = 100_000;
/**
 * Bytes derived: the FIPS provider refuses keys under 112 bits (its PBKDF2 lower-bound check),
 * so 16 are derived and the first {@link SECRET_VERSION_BYTES} kept.
 */
const SECRET_DERIVED_BYTES = 16;
/** 40 bytes: the FIPS provider wants 128 bits of salt at least. */
const SECRET_SALT = 'rt-bootstrapper/source-version/secret/v2';

/** JSON with object keys sorted at every depth, so equal content gives equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

// PBKDF2 is slow by design; remember the last few results by a plain digest of the input so
// repeated computations of the same content (each reflector event) cost a hash, not a PBKDF2.
// The digest stays in this process's memory and is never exposed.
const secretVersions = new Map<string, string>();
const SECRET_CACHE_SIZE = 16;

/** The content version of a pull Secret: `type` (API default `Opaque`) and `data`. */
export function secretContentVersion(secret: V1Secret): string {
  const text = canonicalJson({ type: secret.type ?? 'Opaque', data: secret.data ?? {} });
  const key = createHash('sha256').update(text).digest('hex');
  const cached = secretVersions.get(key);
  if (cached !== undefined) return cached;
  const version = pbkdf2Sync(text, SECRET_SALT, SECRET_ITERATIONS, SECRET_DERIVED_BYTES, 'sha256')
    .subarray(0, SECRET_VERSION_BYTES)
    .toString('hex');
  if (secretVersions.size >= SECRET_CACHE_SIZE) {
    const oldest = secretVersions.keys().next();
    if (oldest.done !== true) secretVersions.delete(oldest.value);
  }
  secretVersions.set(key, version);
  return version;
}

/** The content version of a ConfigMap: `data` and `binaryData` (absent and empty are equal). */
export function configMapContentVersion(cm: V1ConfigMap): string {
  return versionDigest('configmap', canonicalJson({ data: cm.data ?? {}, binaryData: cm.binaryData ?? {} }));
}

/** The content version of a ClusterTrustBundle: its `spec`. */
export function clusterTrustBundleContentVersion(ctb: ClusterTrustBundle): string {
  return versionDigest('clustertrustbundle', canonicalJson(ctb.spec));
}

/**
 * Sources counted in the set version only while watched. A controller that does not watch them
 * keeps the set versions it had before they existed, so its recorded state stays current.
 */
export const CONDITIONAL_SOURCE_KINDS: readonly SourceKind[] = ['manifestsConfigMap'];

/**
 * The version of the whole set: one digest over the per-source versions in a fixed order, a
 * missing source counting as such, so any content change of any source changes it. The three
 * base sources always count (an unwatched trust bundle as missing); a conditional source counts
 * only when `watched` lists it.
 */
export function sourceSetVersion(versions: SourceVersions, watched: readonly SourceKind[] = []): string {
  const counted: (string | undefined)[] = [
    versions.pullSecret,
    versions.clusterTrustBundle,
    versions.configMap,
  ];
  for (const kind of CONDITIONAL_SOURCE_KINDS) if (watched.includes(kind)) counted.push(versions[kind]);
  return setVersionOf(counted);
}

/** Whether two watched lists count the same sources in the set version. */
export function sameCountedSources(a: readonly SourceKind[], b: readonly SourceKind[]): boolean {
  return CONDITIONAL_SOURCE_KINDS.every((kind) => a.includes(kind) === b.includes(kind));
}
