/** A drift report as a runtime's forwarder sends it, for tests of the KCP's listener. */
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import type { DirectMode } from '../../src/controller/direct/direct-mode-options.js';
import type { CertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { httpsCall, type Reply } from './https-call.js';

/** Where the report goes, and who sends it. */
export interface DriftReportOptions {
  /** The listener's port on 127.0.0.1. */
  readonly port: number;
  /** What the sender trusts of the listener (its CA bundle). */
  readonly caPem: string;
  /** The CA the runtime's client certificate is issued by. */
  readonly issuer: CertificateAuthority;
  readonly runtimeId: string;
  /** The runtime's domain (the certificate's SAN). */
  readonly domain: string;
}

/** Reports that the runtime's pull Secret changed; resolves the listener's answer. */
export async function reportPullSecretDrift(o: DriftReportOptions): Promise<Reply> {
  const client = await issueCertificate(o.issuer, {
    commonName: o.runtimeId,
    dnsNames: [o.domain],
    usage: 'client',
  });
  return httpsCall({
    port: o.port,
    caPem: o.caPem,
    path: '/v2/rt-bootstrapper/event',
    client,
    body: JSON.stringify({
      watched: { Namespace: RUNTIME_NAMESPACE, Name: 'registry-credentials' },
      watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
    }),
  });
}

/**
 * Reports, as runtime `runtimeId` of `domain`, that its pull Secret changed to the drift listener
 * of a running direct mode, with a client certificate of its CA.
 */
export function reportPullSecretDriftTo(
  mode: Pick<DirectMode, 'driftPort' | 'cas'>,
  runtimeId: string,
  domain: string,
): Promise<Reply> {
  return reportPullSecretDrift({
    port: mode.driftPort ?? 0,
    caPem: mode.cas.trustBundle(),
    issuer: mode.cas.current(),
    runtimeId,
    domain,
  });
}
