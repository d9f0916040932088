/**
 * The set version as both ends compute it (pure). The KCP digests the content versions of its
 * sources (../controller/sources/content-hash.ts `sourceSetVersion`); a runtime holds every one
 * of them on the objects of the set (annotation {@link CONTENT_VERSION_ANNOTATION}), so its
 * webhook computes the same digest from what it sees there, and a change of one source is one
 * write to the runtime: the changed object, with no commit written after it (docs/controller.md).
 */
import { createHash } from 'node:crypto';

/**
 * On each object of the set on a runtime (trust bundle, pull Secret, config ConfigMap): the
 * content version of the KCP source it was made from. An object whose source did not change
 * keeps it, so a change of one source leaves the others as they were.
 */
export const CONTENT_VERSION_ANNOTATION = 'rt-bootstrapper.kyma-project.io/content-version';

/**
 * On the runtime's config ConfigMap, only while its config names no trust bundle: the content
 * version of the KCP's trust bundle (`-`: none), which the set version counts though no bundle
 * is written to the runtime.
 */
export const UNWRITTEN_BUNDLE_ANNOTATION = 'rt-bootstrapper.kyma-project.io/set-trust-bundle-version';

/** Hex digits of a version: 64 bits, plenty to tell a handful of contents apart. */
const VERSION_HEX_DIGITS = 16;

/** A truncated SHA-256 of `text` under `domain` (a content or set version). */
export function versionDigest(domain: string, text: string): string {
  return createHash('sha256')
    .update(domain)
    .update('\0')
    .update(text)
    .digest('hex')
    .slice(0, VERSION_HEX_DIGITS);
}

/**
 * The set version over the content versions of the counted sources, in their fixed order (pull
 * Secret, trust bundle, config ConfigMap, then conditional ones); a missing one counts as such.
 */
export function setVersionOf(counted: readonly (string | undefined)[]): string {
  return versionDigest('source-set', counted.map((v) => v ?? '-').join(','));
}

/** What a webhook sees of the set on its runtime. */
export interface RuntimeSetParts {
  /** Annotations of the config ConfigMap. */
  readonly configMap: Readonly<Record<string, string>> | undefined;
  /** Content version of the pull Secret the config names, in the namespace it names (undefined: absent). */
  readonly pullSecret: string | undefined;
  /** Content version of the trust bundle the config names (undefined: absent, or none named). */
  readonly trustBundle: string | undefined;
}

/**
 * The set version a runtime holds, computed from its objects as the KCP computes it from its
 * sources; undefined when the ConfigMap carries no content version (not written by the KCP's
 * direct mode: a file, KIM's ConfigMap). An object of the set that is absent counts as missing,
 * which names no set of the KCP's until it is back.
 */
export function runtimeSetVersion(parts: RuntimeSetParts): string | undefined {
  const config = parts.configMap?.[CONTENT_VERSION_ANNOTATION];
  if (config === undefined) return undefined;
  const unwritten = parts.configMap?.[UNWRITTEN_BUNDLE_ANNOTATION];
  const bundle = unwritten === undefined ? parts.trustBundle : unwritten === '-' ? undefined : unwritten;
  return setVersionOf([parts.pullSecret, bundle, config]);
}
