/**
 * Customers' registry caches (docs/registry-caches.md). KIM lets a runtime's users configure
 * Gardener's registry-cache extension per upstream host through `RegistryCacheConfig` objects on
 * the runtime (kyma-project/registry-cache, `core.kyma-project.io/v1beta1`, namespaced,
 * `spec.upstream`); KIM copies them into the Shoot, and the extension makes every node's
 * containerd pull that host through the cache (`hosts.toml`). Where our overrides rewrite that
 * host, the image no longer names it and the cache is bypassed. The runtime agent finds the cached
 * hosts, reports them in the status ConfigMap (./webhook-status.ts) under its own key and field
 * manager, and the config's `registryCaches` chooses who wins. Names and the report's shape, which
 * both sides share.
 */
import { z } from 'zod';
import { REGISTRY_HOST_RE } from '../image/image-reference.js';
import type { ApiFamily } from '../kube/served-api.js';

/** The versions of RegistryCacheConfig spoken, most preferred first. */
export const REGISTRY_CACHE_VERSIONS = ['v1beta1'] as const;
/** One of {@link REGISTRY_CACHE_VERSIONS}. */
export type RegistryCacheVersion = (typeof REGISTRY_CACHE_VERSIONS)[number];

/** RegistryCacheConfig as discovery looks for it (../kube/served-api.ts). */
export const REGISTRY_CACHE_API: ApiFamily<RegistryCacheVersion> = {
  group: 'core.kyma-project.io',
  resource: 'registrycacheconfigs',
  kind: 'RegistryCacheConfig',
  versions: REGISTRY_CACHE_VERSIONS,
};

/**
 * The config's `registryCaches` (ours): where a host our overrides rewrite has a customer's cache
 * on the runtime, `rewrite` (the default: the landscape's rules win, and the runtime reports it)
 * or `leave` (images of that host are left as they are, for the cache, on that runtime).
 */
export const REGISTRY_CACHE_MODES = ['rewrite', 'leave'] as const;
/** One of {@link REGISTRY_CACHE_MODES}. */
export type RegistryCacheMode = (typeof REGISTRY_CACHE_MODES)[number];
/** The mode of a config without the field: as before the field existed. */
export const DEFAULT_REGISTRY_CACHE_MODE: RegistryCacheMode = 'rewrite';

/** Key of the status ConfigMap that carries the report. */
export const REGISTRY_CACHES_KEY = 'registryCaches';

/**
 * Field manager of {@link REGISTRY_CACHES_KEY}: only the agent's leader writes it, and an apply of
 * another manager that leaves the key out must not remove it.
 */
export const REGISTRY_CACHES_FIELD_MANAGER = 'rt-bootstrapper-webhook-registry-caches';

/** The most hosts a report lists (each list); the rest are counted in `more`. */
export const MAX_REPORTED_HOSTS = 32;
/** The longest host a report carries: a DNS name (253) and a port. */
export const MAX_HOST_CHARS = 260;
/** `api` when the runtime serves no RegistryCacheConfig version we speak. */
export const CACHE_API_NOT_SERVED = 'none';

// A registry host (the pattern runs in linear time; the text is bounded before parsing): the KCP's
// messages name them.
const host = z.string().min(1).max(MAX_HOST_CHARS).regex(REGISTRY_HOST_RE);
const hosts = z.array(host).max(MAX_REPORTED_HOSTS);

const reportShape = z.object({
  /** `core.kyma-project.io/v1beta1` where served, else {@link CACHE_API_NOT_SERVED}. */
  api: z.string().max(64),
  /** Upstream hosts with a ready customer cache, sorted (at most {@link MAX_REPORTED_HOSTS}). */
  hosts,
  /** Hosts with a cache beyond those listed. */
  more: z.number().int().nonnegative(),
  /** Of the cached hosts, those the overrides in force rewrite, sorted. */
  rewritten: hosts,
  /** The config's `registryCaches`: whether the rewritten ones are still rewritten or left. */
  mode: z.enum(REGISTRY_CACHE_MODES),
  /** When the caches were read (RFC 3339). */
  at: z.string().max(40),
});

/** What the agent reports of the customers' registry caches. */
export type RegistryCachesReport = z.infer<typeof reportShape>;

/** The most characters of the report the KCP parses (two full lists of the longest hosts fit). */
export const REGISTRY_CACHES_REPORT_MAX_CHARS = 2 * MAX_REPORTED_HOSTS * (MAX_HOST_CHARS + 3) + 512;

/** Serializes a report for the status ConfigMap. */
export function writeRegistryCaches(report: RegistryCachesReport): string {
  return JSON.stringify(report);
}

/**
 * Reads a report from the status ConfigMap; undefined when absent, over
 * {@link REGISTRY_CACHES_REPORT_MAX_CHARS} (not parsed), or malformed.
 */
export function readRegistryCaches(textValue: string | undefined): RegistryCachesReport | undefined {
  if (textValue === undefined || textValue.length > REGISTRY_CACHES_REPORT_MAX_CHARS) return undefined;
  try {
    const parsed = reportShape.safeParse(JSON.parse(textValue));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
