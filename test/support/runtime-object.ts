/** A Runtime object as KIM creates it on the KCP, for tests and benchmarks. */
import { RUNTIME_API_VERSION, RUNTIME_KIND, RUNTIME_NAMESPACE, type Runtime } from '../../src/api/runtime.js';

/** A Runtime as KIM would create it (the fields its CRD requires). */
export function runtimeObject(name: string, labels: Record<string, string> = {}): Runtime {
  return {
    apiVersion: RUNTIME_API_VERSION,
    kind: RUNTIME_KIND,
    metadata: {
      name,
      namespace: RUNTIME_NAMESPACE,
      labels: { 'kyma-project.io/runtime-id': name, ...labels },
    },
    spec: {
      shoot: {
        name: `shoot-${name}`.slice(0, 20),
        purpose: 'production',
        platformRegion: 'cf-eu10',
        region: 'eu-central-1',
        secretBindingName: 'aws-binding',
        provider: {
          type: 'aws',
          workers: [{ name: 'cpu-worker-0', machine: { type: 'm6i.large' }, minimum: 1, maximum: 3 }],
        },
        networking: { pods: '100.64.0.0/12', nodes: '10.250.0.0/16', services: '100.104.0.0/13' },
      },
      security: {
        administrators: ['admin@example.com'],
        networking: { filter: { egress: { enabled: false } } },
      },
    },
  };
}
