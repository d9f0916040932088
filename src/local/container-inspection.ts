import { CoreV1Api, type KubeConfig, type V1EphemeralContainer, type V1Pod } from '@kubernetes/client-node';
import { eventually } from '../envtest/eventually.js';
import { ControlPlaneError } from '../envtest/errors.js';

/** What {@link inspectContainer} saw inside a running container. */
export interface ContainerView {
  /** Each asked file's content as the container sees it, or the error code reading it. */
  readonly files: Readonly<Record<string, { readonly text: string } | { readonly error: string }>>;
  /** The environment of the container's main process. */
  readonly env: Readonly<Record<string, string>>;
}

/** Where and how to look. */
export interface InspectOptions {
  readonly namespace: string;
  readonly pod: string;
  /** The container to look into. */
  readonly container: string;
  /** An image with `/usr/bin/node` (the rtb image), pullable by the node without credentials. */
  readonly image: string;
  /** Absolute paths inside the container. */
  readonly files: readonly string[];
  readonly timeoutMs?: number;
}

/**
 * The script the inspecting container runs: it joins the target's PID namespace, so PID 1 is the
 * target's main process and `/proc/1/root` its root filesystem, mounts included.
 */
export function inspectionScript(files: readonly string[]): string {
  return [
    "const fs = require('node:fs');",
    'const files = {};',
    `for (const f of ${JSON.stringify(files)}) {`,
    "  try { files[f] = { text: fs.readFileSync('/proc/1/root' + f, 'utf8') }; }",
    '  catch (e) { files[f] = { error: String(e.code ?? e) }; }',
    '}',
    'const env = {};',
    "for (const kv of fs.readFileSync('/proc/1/environ', 'utf8').split('\\0')) {",
    "  const i = kv.indexOf('='); if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);",
    '}',
    'console.log(JSON.stringify({ files, env }));',
  ].join('\n');
}

/**
 * Reads files and the environment from inside a running container, as `kubectl debug
 * --target` does: an ephemeral container in the target's PID namespace prints what it sees to
 * its log. It runs as root with `SYS_PTRACE` (to enter another user's `/proc/1/root`) and
 * `DAC_READ_SEARCH` (`/proc/1/environ` is mode 0400, owned by that user) and nothing else. Works
 * for images without a shell (the pause image).
 */
export async function inspectContainer(kc: KubeConfig, o: InspectOptions): Promise<ContainerView> {
  const core = kc.makeApiClient(CoreV1Api);
  const pod = await core.readNamespacedPod({ name: o.pod, namespace: o.namespace });
  const name = `inspect-${(pod.spec?.ephemeralContainers?.length ?? 0) + 1}`;
  const inspector: V1EphemeralContainer = {
    name,
    image: o.image,
    targetContainerName: o.container,
    command: ['/usr/bin/node', '-e', inspectionScript(o.files)],
    securityContext: {
      runAsUser: 0,
      runAsNonRoot: false,
      capabilities: { add: ['SYS_PTRACE', 'DAC_READ_SEARCH'], drop: ['ALL'] },
    },
  };
  const body: V1Pod = {
    ...pod,
    spec: {
      ...pod.spec,
      containers: pod.spec?.containers ?? [],
      ephemeralContainers: [...(pod.spec?.ephemeralContainers ?? []), inspector],
    },
  };
  await core.replaceNamespacedPodEphemeralcontainers({ name: o.pod, namespace: o.namespace, body });
  const timeoutMs = o.timeoutMs ?? 120_000;
  await eventually(
    async () => {
      const now = await core.readNamespacedPod({ name: o.pod, namespace: o.namespace });
      const state = now.status?.ephemeralContainerStatuses?.find((s) => s.name === name)?.state;
      return state?.terminated;
    },
    timeoutMs,
    `the inspecting container of ${o.namespace}/${o.pod} to finish`,
    200,
  );
  const log = await core.readNamespacedPodLog({ name: o.pod, namespace: o.namespace, container: name });
  const line = log.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line) as ContainerView;
  } catch (error) {
    throw new ControlPlaneError(
      `the inspecting container of ${o.namespace}/${o.pod} printed no report: ${log.slice(0, 500)}`,
      {
        cause: error,
      },
    );
  }
}
