import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';

/** Annotation with the runtime's domain (KIM's name for it). */
export const SKR_DOMAIN_ANNOTATION = 'skr-domain';

/**
 * The runtime's domain: the `skr-domain` annotation, else the host of its API server URL. Its
 * drift client certificate carries it, and the KCP's listener pins reports to it.
 */
export function domainOf(rb: RuntimeBootstrapper, serverHost: string): string {
  return rb.metadata.annotations?.[SKR_DOMAIN_ANNOTATION] ?? serverHost;
}

/** The host of an API server URL, without an IPv6 address's brackets ('' when there is none). */
export function hostOf(server: string | undefined): string {
  try {
    return server ? new URL(server).hostname.replace(/^\[|\]$/g, '') : '';
  } catch {
    return '';
  }
}
