/** A real API server's own metrics, for tests that count what reached it. */
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { httpsCall } from './https-call.js';

/** The API server's count of requests (`apiserver_request_total`) by verb, resource and code. */
export function apiServerRequests(
  cluster: LocalCluster,
  verb: string,
  resource: string,
  code: string,
): Promise<number> {
  return apiServerMetric(cluster, 'apiserver_request_total', { verb, resource, code });
}

/** The sum of a metric of the API server over its series that carry these label values. */
export async function apiServerMetric(
  cluster: LocalCluster,
  name: string,
  labels: Readonly<Record<string, string>>,
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
  let n = 0;
  for (const line of reply.body.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      n += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return n;
}
