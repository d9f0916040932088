import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { eventually } from '../../../src/envtest/eventually.js';

/** Bounds, not assertions on speed: a cold image pull on a busy 2-core machine takes a while. */
export const POD_READY_MS = 180_000;

/**
 * How often the waits for a Pod, an event or the webhook's Deployment ask the API server: a
 * quarter second (not eventually's 50 ms), since they wait seconds to minutes for a steady state
 * while other files run beside them on two cores.
 */
export const POLL_MS = 250;

/** The mark every Pod the webhook changed carries. */
export const MODIFIED = 'rt-bootstrapper.kyma-project.io/modified';

/** Options of {@link httpPod}. */
export interface HttpPodOptions {
  readonly pullSecret?: string;
  readonly pullAlways?: boolean;
  /** JavaScript run before the server starts (e.g. printing a line to the log). */
  readonly prelude?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

/**
 * A Pod that serves HTTP on 8080 from the rtb image (plain node, not `rtb`), hardened as the
 * webhook's own Pods are, with a readiness probe the kubelet runs.
 */
export function httpPod(name: string, image: string, o: HttpPodOptions = {}): V1Pod {
  return {
    metadata: { name, ...(o.annotations ? { annotations: { ...o.annotations } } : {}) },
    spec: {
      ...(o.pullSecret ? { imagePullSecrets: [{ name: o.pullSecret }] } : {}),
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: 'server',
          image,
          ...(o.pullAlways ? { imagePullPolicy: 'Always' } : {}),
          command: ['/usr/bin/node', '-e'],
          args: [`${o.prelude ?? ''}; require('node:http').createServer((q, s) => s.end('ok')).listen(8080)`],
          readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
    },
  };
}

/** An HTTP Pod that first prints one line computed by `expression` (JavaScript) to its log. */
export const printingPod = (name: string, image: string, expression: string, o: HttpPodOptions = {}): V1Pod =>
  httpPod(name, image, { ...o, prelude: `console.log(${expression})` });

export const isReady = (pod: V1Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export const isMutated = (pod: V1Pod): boolean => pod.metadata?.annotations?.[MODIFIED] === 'true';

/**
 * Creates fresh Pods until one is admitted with the webhook's mark: with `failurePolicy: Ignore`
 * a Pod admitted while the API server does not yet reach the webhook is left unmutated.
 */
export async function createMutatedPod(
  core: CoreV1Api,
  namespace: string,
  prefix: string,
  make: (name: string) => V1Pod,
): Promise<V1Pod> {
  let attempt = 0;
  return eventually(
    async () => {
      const name = `${prefix}-${attempt++}`;
      const created = await core.createNamespacedPod({ namespace, body: make(name) });
      if (isMutated(created)) return created;
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
      return undefined;
    },
    60_000,
    'a Pod mutated by the webhook',
    POLL_MS,
  );
}

/** Waits until the Pod is Ready and returns it. */
export function readyPod(core: CoreV1Api, namespace: string, name: string): Promise<V1Pod> {
  return eventually(
    async () => {
      const pod = await core.readNamespacedPod({ name, namespace });
      return isReady(pod) ? pod : undefined;
    },
    POD_READY_MS,
    `Pod ${namespace}/${name} to be Ready`,
    POLL_MS,
  );
}

/** Waits until the Pod is Ready and returns its log (read through the API server from the kubelet). */
export async function readyPodLog(core: CoreV1Api, namespace: string, name: string): Promise<string> {
  await readyPod(core, namespace, name);
  return core.readNamespacedPodLog({ name, namespace });
}

/**
 * Waits for the kubelet's event that it pulled `image` for the Pod and returns its message. The
 * container status is no proof: it names whichever tag of the same digest the runtime lists
 * first, and the open registry's copy may already be on the node.
 */
export function pulledEvent(core: CoreV1Api, namespace: string, pod: string, image: string): Promise<string> {
  return eventually(
    async () => {
      const events = await core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${pod}`,
      });
      return events.items
        .map((e) => (e.reason === 'Pulled' ? (e.message ?? '') : ''))
        .find((m) => m.startsWith(`Successfully pulled image "${image}"`));
    },
    60_000,
    `the kubelet's event that it pulled ${image} for ${namespace}/${pod}`,
    POLL_MS,
  );
}
