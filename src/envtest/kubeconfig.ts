import { stringify } from 'yaml';

/** Parameters of a single-context kubeconfig with client-certificate auth. */
export interface KubeconfigParams {
  name: string;
  server: string;
  caPem: string;
  clientCertPem: string;
  clientKeyPem: string;
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** Renders a kubeconfig that kubectl and @kubernetes/client-node both read. */
export function renderKubeconfig(p: KubeconfigParams): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: p.name, cluster: { server: p.server, 'certificate-authority-data': b64(p.caPem) } }],
    users: [
      {
        name: `${p.name}-admin`,
        user: { 'client-certificate-data': b64(p.clientCertPem), 'client-key-data': b64(p.clientKeyPem) },
      },
    ],
    contexts: [{ name: p.name, context: { cluster: p.name, user: `${p.name}-admin` } }],
    'current-context': p.name,
    preferences: {},
  });
}
