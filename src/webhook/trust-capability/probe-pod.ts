/**
 * The projection probe (pure): a Pod the webhook creates with `?dryRun=All` in its own namespace,
 * carrying a projected `clusterTrustBundle` source as the trust-bundle feature adds one, and what
 * the API server's answer says. The dry-run answer is the Pod as it would be stored: where the
 * API server's `ClusterTrustBundleProjection` gate is off, its strategy has dropped the source and
 * left the volume with `sources: [{}]` (docs/trust-bundle-api.md); nothing is ever stored.
 *
 * The Pod passes Pod Security `restricted`, asks for no token and the least resources, so that
 * admission on a customer's runtime has as little reason as possible to refuse it; it opts out of
 * every rt-bootstrapper feature and carries the label with which our registration leaves our own Pods in the webhook namespace
 * out, so our own webhook never changes it.
 */
import { FEATURE_ALL } from '../../api/webhook-features.js';
import { APP_NAME, APP_NAME_LABEL } from '../../api/runtime-names.js';
import type { ProjectionFinding } from '../../api/trust-bundle-capability.js';

/** The probe's volume. */
export const PROBE_VOLUME = 'trust-bundle-probe';
/** The bundle the probe names: need not exist (the API server does not look at it on create). */
export const PROBE_BUNDLE = 'rt-bootstrapper-projection-probe';
/** `app.kubernetes.io/component` of the probe Pod. */
export const PROBE_COMPONENT = 'projection-probe';
/** Never pulled: a dry-run starts nothing. */
const PROBE_IMAGE = 'registry.k8s.io/pause:3.10';

/** The probe Pod for `namespace`. */
export function projectionProbePod(namespace: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'rt-bootstrapper-projection-probe-',
      namespace,
      labels: { [APP_NAME_LABEL]: APP_NAME, 'app.kubernetes.io/component': PROBE_COMPONENT },
      annotations: { [FEATURE_ALL]: 'false' },
    },
    spec: {
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'probe',
          image: PROBE_IMAGE,
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            readOnlyRootFilesystem: true,
          },
          resources: {
            requests: { cpu: '1m', memory: '4Mi' },
            limits: { cpu: '1m', memory: '4Mi' },
          },
          volumeMounts: [{ name: PROBE_VOLUME, mountPath: '/probe', readOnly: true }],
        },
      ],
      volumes: [
        {
          name: PROBE_VOLUME,
          projected: {
            defaultMode: 420,
            sources: [{ clusterTrustBundle: { name: PROBE_BUNDLE, path: 'probe.pem' } }],
          },
        },
      ],
    },
  };
}

interface AnsweredSource {
  readonly clusterTrustBundle?: { readonly name?: string };
}

interface AnsweredVolume {
  readonly name?: string;
  readonly projected?: { readonly sources?: unknown };
}

/**
 * What the dry-run answer says: the source there (`kept`), the volume there without it
 * (`dropped`), or no such volume at all (`unknown`: something else changed the Pod).
 */
export function projectionFinding(answer: unknown): ProjectionFinding {
  const volumes: unknown = (answer as { spec?: { volumes?: unknown } } | null | undefined)?.spec?.volumes;
  const list = Array.isArray(volumes) ? (volumes as readonly (AnsweredVolume | null)[]) : [];
  const sources = list.find((v) => v?.name === PROBE_VOLUME)?.projected?.sources;
  if (!Array.isArray(sources)) return 'unknown';
  return (sources as readonly (AnsweredSource | null)[]).some(
    (s) => s?.clusterTrustBundle?.name === PROBE_BUNDLE,
  )
    ? 'kept'
    : 'dropped';
}
