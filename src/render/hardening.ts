import type {
  V1PodSecurityContext,
  V1Probe,
  V1SecurityContext,
  V1TopologySpreadConstraint,
} from '@kubernetes/client-node';

/** Pod security context of every Deployment we render (Pod Security "restricted"). */
export const restrictedPodSecurityContext = (): V1PodSecurityContext => ({
  runAsNonRoot: true,
  runAsUser: 65532,
  seccompProfile: { type: 'RuntimeDefault' },
});

/** Container security context of every container we render. */
export const restrictedContainerSecurityContext = (): V1SecurityContext => ({
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
});

/** Spreads a Deployment's replicas over nodes, so one node going away leaves the others answering. */
export const spreadOverNodes = (
  matchLabels: Readonly<Record<string, string>>,
): V1TopologySpreadConstraint[] => [
  {
    maxSkew: 1,
    topologyKey: 'kubernetes.io/hostname',
    whenUnsatisfiable: 'ScheduleAnyway',
    labelSelector: { matchLabels: { ...matchLabels } },
  },
];

/** An HTTP(S) GET probe on a named port. */
export const httpProbe = (path: string, port: string, scheme?: 'HTTPS'): V1Probe => ({
  httpGet: { path, port, scheme },
  periodSeconds: 10,
  timeoutSeconds: 2,
});
