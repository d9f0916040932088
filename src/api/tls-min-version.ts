import type { SecureVersion } from 'node:tls';

/** The oldest TLS version a listener of ours, or the drift client, agrees to. */
export type TlsMinVersion = Extract<SecureVersion, 'TLSv1.2' | 'TLSv1.3'>;

/**
 * TLS 1.3 unless told otherwise: upstream's architecture constraints make it the minimum on
 * regulated landscapes. `--tls-min-version 1.2` lets in a peer that cannot speak 1.3
 * (docs/webhook-hardening.md). The Kubernetes API clients are not ours to bound: they talk to
 * whatever API server the cluster runs.
 */
export const DEFAULT_TLS_MIN_VERSION: TlsMinVersion = 'TLSv1.3';
