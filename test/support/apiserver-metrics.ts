/** A real API server's own metrics, for tests that count what reached it. */
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { httpsCall } from './https-call.js';

/** The API server's count of requests (`apiserver_request_total`) by verb, resource and code. */
export async function apiServerRequests(
  cluster: LocalCluster,
  verb: string,
  resource: string,
  code: string,
): Promise<number> {
  const client = await issueCertificate(cluster.ca, {
    commonName: 'metrics-reader',
    organizations: ['system:masters'],
    usage: 'client',
  });
  const reply = await httpsCall({
    port: Number(new URL(cluster.server).port),
    caPem: cluster.caPem,
    path: '/metrics',
    method: 'GET',
    client,
  });
  if (reply.status !== 200) throw new Error(`GET /metrics answered ${reply.status}`);
  const has = (line: string, k: string, v: string): boolean => line.includes(`${k}="${v}"`);
  let n = 0;
  for (const line of reply.body.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (has(line, 'verb', verb) && has(line, 'resource', resource) && has(line, 'code', code))
      n += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return n;
}
