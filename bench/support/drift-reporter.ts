import https from 'node:https';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { loadCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { postJson } from '../../src/watcher/post-json.js';
import { encodeWatchEvent, WATCH_EVENT_PATH } from '../../src/watcher/watch-event.js';
import { domainOf } from './kcp-bench.js';

/**
 * Drift reports as runtimes send them: a WatchEvent POSTed over mutual TLS to the controller's
 * listener, with a client certificate of the controller's CA (read from its KCP Secret) whose CN
 * is the runtime ID and whose SAN is the runtime's domain. One agent per runtime.
 */
export class DriftReporter {
  private constructor(
    private readonly url: URL,
    private readonly agents: ReadonlyMap<string, https.Agent>,
  ) {}

  /** Client identities for `runtimeIds`, issued by the controller's CA. */
  static async create(
    kcp: ClusterAccess,
    listenerPort: number,
    runtimeIds: readonly string[],
  ): Promise<DriftReporter> {
    const secret = await kubeRequest<{ data?: Record<string, string> }>(kcp, {
      method: 'GET',
      path: '/api/v1/namespaces/kcp-system/secrets/rt-bootstrapper-ca',
    });
    const pem = (k: string): string => Buffer.from(secret.data?.[k] ?? '', 'base64').toString('utf8');
    const ca = await loadCertificateAuthority(pem('tls.crt'), pem('tls.key'));
    const agents = new Map<string, https.Agent>();
    for (const id of runtimeIds) {
      const issued = await issueCertificate(ca, {
        commonName: id,
        dnsNames: [domainOf(id)],
        usage: 'client',
      });
      agents.set(
        id,
        new https.Agent({ keepAlive: true, ca: ca.certPem, cert: issued.certPem, key: issued.keyPem }),
      );
    }
    return new DriftReporter(new URL(`https://127.0.0.1:${listenerPort}${WATCH_EVENT_PATH}`), agents);
  }

  /** Reports a change of the pull Secret on `runtimeId`; resolves with the listener's HTTP status. */
  async report(runtimeId: string): Promise<number> {
    const agent = this.agents.get(runtimeId);
    if (!agent) throw new Error(`no client identity for ${runtimeId}`);
    const body = encodeWatchEvent({
      watched: { Namespace: 'kyma-system', Name: 'registry-credentials' },
      watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
    });
    const answer = await postJson(this.url, agent, body, 10_000).answer;
    return answer.status;
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
  }
}
