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

/**
 * How long a container may take after its start to answer its health endpoint before the kubelet
 * restarts it: on a node short of CPU the process takes a minute and more to load, and the liveness
 * probe alone (3 failures 10 s apart, from the start) restarted it before it ever served.
 */
export const STARTUP_BUDGET_SECONDS = 180;

/**
 * A startup probe: every second until it first passes, for at most {@link STARTUP_BUDGET_SECONDS};
 * liveness and readiness are probed only after it, and readiness at once (the kubelet's sync on the
 * startup result runs it), so a Pod is Ready about a second after it serves, not at the next 10 s
 * readiness period.
 */
export const httpStartupProbe = (path: string, port: string, scheme?: 'HTTPS'): V1Probe => ({
  ...httpProbe(path, port, scheme),
  periodSeconds: 1,
  failureThreshold: STARTUP_BUDGET_SECONDS,
});
