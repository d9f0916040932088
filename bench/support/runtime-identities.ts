import https from 'node:https';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { loadCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { domainOf } from './kcp-bench.js';
import { forEachLimited } from './limited.js';

/** A runtime's drift-channel client identity. */
export interface RuntimeIdentity {
  readonly certPem: string;
  readonly keyPem: string;
}

/**
 * The drift channel's client identities of a fleet, as the controller issues them to runtimes:
 * certificates of the controller's CA (read from its KCP Secret) whose CN is the runtime ID and
 * whose SAN is the runtime's domain; and that CA, which also signs the listener's certificate.
 */
export class RuntimeIdentities {
  private constructor(
    readonly caPem: string,
    private readonly byId: ReadonlyMap<string, RuntimeIdentity>,
  ) {}

  /** Issues an identity for each of `runtimeIds`. */
  static async issue(kcp: ClusterAccess, runtimeIds: readonly string[]): Promise<RuntimeIdentities> {
    const secret = await kubeRequest<{ data?: Record<string, string> }>(kcp, {
      method: 'GET',
      path: '/api/v1/namespaces/kcp-system/secrets/rt-bootstrapper-ca',
    });
    const pem = (k: string): string => Buffer.from(secret.data?.[k] ?? '', 'base64').toString('utf8');
    const ca = await loadCertificateAuthority(pem('tls.crt'), pem('tls.key'));
    const byId = new Map<string, RuntimeIdentity>();
    await forEachLimited(runtimeIds, 8, async (id) => {
      const issued = await issueCertificate(ca, {
        commonName: id,
        dnsNames: [domainOf(id)],
        usage: 'client',
      });
      byId.set(id, { certPem: issued.certPem, keyPem: issued.keyPem });
    });
    return new RuntimeIdentities(ca.certPem, byId);
  }

  /** The identity of `runtimeId`; throws for a runtime not issued. */
  of(runtimeId: string): RuntimeIdentity {
    const identity = this.byId.get(runtimeId);
    if (!identity) throw new Error(`no client identity for ${runtimeId}`);
    return identity;
  }
}

/**
 * One HTTPS agent per runtime with its identity, made on first use. `keepAlive`: a drift reporter
 * keeps its connection; an attestor, minutes apart, keeps only its TLS session.
 */
export class RuntimeAgents {
  private readonly agents = new Map<string, https.Agent>();

  constructor(
    private readonly identities: RuntimeIdentities,
    private readonly keepAlive: boolean,
  ) {}

  /** The agent of `runtimeId`. */
  of(runtimeId: string): https.Agent {
    let agent = this.agents.get(runtimeId);
    if (!agent) {
      const { certPem, keyPem } = this.identities.of(runtimeId);
      agent = new https.Agent({
        keepAlive: this.keepAlive,
        ca: this.identities.caPem,
        cert: certPem,
        key: keyPem,
      });
      this.agents.set(runtimeId, agent);
    }
    return agent;
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
  }
}
