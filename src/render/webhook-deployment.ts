import type { V1Deployment, V1Probe } from '@kubernetes/client-node';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../api/webhook-status.js';
import {
  WATCHER_TLS_SECRET,
  WEBHOOK_CONTAINER,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_METRICS_PORT,
  WEBHOOK_METRICS_PORT_NAME,
  WEBHOOK_PORT,
  WEBHOOK_PORT_NAME,
  WEBHOOK_SELECTOR,
  WEBHOOK_SERVICE_ACCOUNT,
} from '../api/runtime-names.js';
import { CONFIG_MAP_KEY } from '../api/webhook-features.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';
import {
  MIN_READY_SECONDS,
  SHUTDOWN_DELAY_SECONDS,
  TERMINATION_GRACE_SECONDS,
} from '../api/serving-limits.js';
import {
  httpProbe,
  httpStartupProbe,
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
  spreadOverNodes,
} from './hardening.js';
import { HOST_IP_REFERENCE, objectLabels, type WebhookManifestOptions } from './webhook-options.js';

/**
 * The webhook's old generation, in MB: room for what the server's bounds let requests hold (the
 * 32 MiB decode budget), the caches and the garbage between collections, so that V8
 * collects before the process outgrows {@link WEBHOOK_MEMORY_LIMIT} (docs/webhook-hardening.md).
 */
export const WEBHOOK_OLD_SPACE_MB = 96;

/**
 * Node options of the webhook container. A young generation of at most 4 MB per semi-space
 * keeps the process under 100 MB when Pods arrive by the thousand a second, where Node's default
 * of 16 MB does not, at no cost in throughput that shows: what a request allocates dies young
 * either way (docs/figures.md, webhook throughput). The old generation is capped so that V8
 * collects rather than grows under hostile load (docs/webhook-hardening.md).
 */
export const WEBHOOK_NODE_OPTIONS = `--max-semi-space-size=4 --max-old-space-size=${WEBHOOK_OLD_SPACE_MB}`;

/**
 * glibc's allocator settings for the webhook. By default glibc serves an allocation from its heap
 * once a block of that size has been freed (a dynamic mmap threshold), and keeps freed heap
 * memory: after a burst of large request bodies the process kept tens of MB it no longer used. A
 * fixed threshold of 128 KiB maps every large buffer on its own and returns it when freed, which
 * lowers both the peak and what stays afterwards (docs/webhook-hardening.md).
 */
export const WEBHOOK_MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: '131072' };

/**
 * Memory request: what the webhook holds serving ordinary load (ready and at 20 Pods/s:
 * docs/figures.md, the webhook under hostile clients), with a quarter more for the caches of a
 * large cluster.
 */
export const WEBHOOK_MEMORY_REQUEST = '96Mi';

/**
 * Memory limit: above the most the process can take by its bounds (old generation
 * {@link WEBHOOK_OLD_SPACE_MB} MB + young 8 MB + 16 MiB of bodies being read + ~50 MB of
 * native memory: ~190 MB; the peaks under the hostile mixes are in docs/figures.md), plus the
 * kernel's socket buffers that the Pod's cgroup is charged for when hundreds of clients send at
 * once (tens of MB).
 */
export const WEBHOOK_MEMORY_LIMIT = '256Mi';

/** Webhook replicas unless the options say otherwise: one may go (a node drain) while one serves. */
export const DEFAULT_WEBHOOK_REPLICAS = 2;

/**
 * The container's command: the image's `rtb`. Explicit, because KIM's apply over upstream's
 * Deployment keeps every field ours leaves unset, and upstream's `command: [/manager]` would
 * otherwise survive it.
 */
export const WEBHOOK_COMMAND: readonly string[] = ['rtb'];

/**
 * The webhook Deployment (pure), the same in every mode, so KIM's apply, direct mode's and an
 * upstream install converge on it: upstream's name, immutable selector, container and port names.
 * The serving certificate is not mounted: every replica reads Secret `rt-bootstrapper-webhook-tls`
 * through the API (docs/serving-certificate.md); in direct mode the KCP writes it and the replicas
 * only follow it (`--serving-cert-issuer=external`), the one difference from KIM's. Health and
 * readiness are served on the webhook's HTTPS port (upstream's 8081 is not declared, nothing listens
 * there); metrics over plain HTTP on upstream's metrics port 8080, which its NetworkPolicy opens to
 * labelled scrapers only.
 */
export function renderWebhookDeployment(
  o: WebhookManifestOptions,
  namespace: string,
  configMap: string,
): V1Deployment {
  const probe = (path: string): V1Probe => httpProbe(path, WEBHOOK_PORT_NAME, 'HTTPS');
  const drift = o.driftListenerUrl;
  const podLabels = {
    ...WEBHOOK_SELECTOR,
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    // Upstream's too: the webhook must not wait for a sidecar to answer the API server.
    'sidecar.istio.io/inject': 'false',
  };
  const fieldRef = (fieldPath: string): { valueFrom: { fieldRef: { fieldPath: string } } } => ({
    valueFrom: { fieldRef: { fieldPath } },
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: WEBHOOK_DEPLOYMENT,
      namespace,
      labels: { ...objectLabels(o), ...WEBHOOK_SELECTOR },
    },
    spec: {
      replicas: o.replicas ?? DEFAULT_WEBHOOK_REPLICAS,
      selector: { matchLabels: { ...WEBHOOK_SELECTOR } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      // A Pod it replaces (ours or upstream's) stops only once the new Pod's endpoint has reached the API server.
      minReadySeconds: MIN_READY_SECONDS,
      template: {
        metadata: { labels: podLabels },
        spec: {
          serviceAccountName: WEBHOOK_SERVICE_ACCOUNT,
          priorityClassName: o.priorityClassName,
          // The drain's delay, its timeout and the drift flush fit in it (../api/serving-limits.ts).
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          securityContext: restrictedPodSecurityContext(),
          topologySpreadConstraints: spreadOverNodes(WEBHOOK_SELECTOR),
          containers: [
            {
              name: WEBHOOK_CONTAINER,
              image: o.image,
              command: [...WEBHOOK_COMMAND],
              args: [
                'webhook',
                `--port=${WEBHOOK_PORT}`,
                `--metrics-port=${WEBHOOK_METRICS_PORT}`,
                `--config-map=${namespace}/${configMap}`,
                `--config-key=${CONFIG_MAP_KEY}`,
                `--log-level=${o.logLevel ?? 'info'}`,
                `--shutdown-delay=${SHUTDOWN_DELAY_SECONDS}s`,
                // The image activates the FIPS provider; the process refuses to start without it.
                '--fips',
                ...(o.landscape === undefined ? [] : [`--landscape=${o.landscape}`]),
                ...(o.restartNamespaces === undefined
                  ? []
                  : [`--restart-namespaces=${o.restartNamespaces.join(',')}`]),
                ...Object.entries(o.registryServers ?? {}).map(([r, url]) => `--registry-server=${r}=${url}`),
                ...(o.repairEscaped === true ? ['--repair-escaped'] : []),
                ...(o.admissionPolicyInstall === true ? ['--admission-policy=install'] : []),
                // Direct mode: the KCP writes the serving certificate and reads the status report.
                ...(o.servingCertIssuer === 'external'
                  ? [
                      '--serving-cert-issuer=external',
                      `--status-config-map=${namespace}/${WEBHOOK_STATUS_CONFIG_MAP}`,
                    ]
                  : []),
                ...(drift
                  ? [
                      `--drift-url=${drift}`,
                      '--drift-cert=/etc/rt-bootstrapper/watcher/tls.crt',
                      '--drift-key=/etc/rt-bootstrapper/watcher/tls.key',
                      '--drift-ca=/etc/rt-bootstrapper/watcher/ca.crt',
                    ]
                  : []),
              ],
              env: [
                { name: 'NODE_OPTIONS', value: WEBHOOK_NODE_OPTIONS },
                ...Object.entries(WEBHOOK_MALLOC_ENV).map(([name, value]) => ({ name, value })),
                // Who holds the serving-certificate Lease, and where its Secret lives.
                { name: 'POD_NAME', ...fieldRef('metadata.name') },
                { name: 'POD_NAMESPACE', ...fieldRef('metadata.namespace') },
                // Where a registry server's URL names the node (Kubernetes expands it in the args).
                ...(Object.values(o.registryServers ?? {}).some((url) => url.includes(HOST_IP_REFERENCE))
                  ? [{ name: 'HOST_IP', ...fieldRef('status.hostIP') }]
                  : []),
              ],
              ports: [
                { name: WEBHOOK_PORT_NAME, containerPort: WEBHOOK_PORT, protocol: 'TCP' },
                { name: WEBHOOK_METRICS_PORT_NAME, containerPort: WEBHOOK_METRICS_PORT, protocol: 'TCP' },
              ],
              // Liveness only once it served: a slow start is not a hung process.
              startupProbe: httpStartupProbe('/healthz', WEBHOOK_PORT_NAME, 'HTTPS'),
              readinessProbe: probe('/readyz'),
              livenessProbe: probe('/healthz'),
              resources: {
                requests: { cpu: '50m', memory: WEBHOOK_MEMORY_REQUEST },
                limits: { memory: WEBHOOK_MEMORY_LIMIT },
              },
              securityContext: restrictedContainerSecurityContext(),
              volumeMounts: drift
                ? [{ name: 'watcher', mountPath: '/etc/rt-bootstrapper/watcher', readOnly: true }]
                : undefined,
            },
          ],
          volumes: drift ? [{ name: 'watcher', secret: { secretName: WATCHER_TLS_SECRET } }] : undefined,
        },
      },
    },
  };
}
