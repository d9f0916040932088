import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { CertificateAuthority } from '../pki/certificate-authority.js';
import { issueCertificate } from '../pki/issue-certificate.js';
import { forwardTcp, type TcpForwarder } from './tcp-forwarder.js';
import { ControlPlaneError } from './errors.js';
import { renderKubeconfig } from './kubeconfig.js';
import { ManagedProcess } from './managed-process.js';
import type { NodeBinaries } from './node-binaries.js';
import { createCgroupRoot, moveToRuntimeCgroup, ownCgroupBase } from './node-cgroups.js';
import {
  cniConflist,
  containerdConfig,
  kubeletConfig,
  PAUSE_IMAGE_NAME,
  type NodePaths,
} from './node-config.js';
import type { NodeNetwork } from './node-network.js';
import { clearNode, releaseNodeResources, type NodeRecord } from './node-resources.js';
import type { NodeSlot } from './node-slot.js';
import { trackNode, untrackNode } from './process-registry.js';
import { runCommand } from './run-command.js';
import { waitNodeReady } from './wait-node-ready.js';

/**
 * Where every kubelet binds its device-plugin socket, whatever its `--root-dir` (kubelet's
 * constant). Two nodes on one machine would remove each other's socket there, or fail to start
 * with EADDRINUSE when they start together; each node mounts a folder of its own over it.
 */
const KUBELET_DEVICE_PLUGINS = '/var/lib/kubelet/device-plugins';

/** What a node needs from its cluster. */
export interface LocalNodeOptions {
  /** The Node object's name. */
  readonly name: string;
  readonly dir: string;
  readonly apiPort: number;
  readonly ca: CertificateAuthority;
  /** The service-account signing key (kube-controller-manager's token controller). */
  readonly serviceAccountKeyFile: string;
  /** The admin client (to wait for the Node). */
  readonly admin: KubeConfig;
  readonly slot: NodeSlot;
  readonly binaries: NodeBinaries;
  readonly log?: (line: string) => void;
}

/**
 * One Kubernetes node on this machine: containerd (Debian's, with runc) and kubelet in a mount
 * namespace of their own (their mounts vanish with them), kube-controller-manager and
 * kube-scheduler, a bridge for the Pods, and the `kubernetes` Service forwarded to the API
 * server. Everything it starts lives in one cgroup tree, so stop() and the exit hooks kill it
 * all, containers included (docs/node.md).
 */
export class LocalNode {
  private constructor(
    readonly name: string,
    readonly network: NodeNetwork,
    readonly paths: NodePaths,
    private readonly record: NodeRecord,
    private readonly processes: ManagedProcess[],
    private readonly forwarder: TcpForwarder,
    private readonly slot: NodeSlot,
    /** How long start() took, containerd's start to the Node Ready. */
    readonly startMs: number,
  ) {}

  /** Forwarders {@link exposeToPods} started, closed with the node. */
  private readonly exposed: TcpForwarder[] = [];

  /** Starts the node and waits until its Node object is Ready. */
  static async start(o: LocalNodeOptions): Promise<LocalNode> {
    const network = o.slot.network;
    const started = Date.now();
    const paths = nodePaths(o.dir, o.binaries);
    await mkdir(paths.cniConfDir, { recursive: true });
    await mkdir(paths.registryHostsDir, { recursive: true });
    await mkdir(paths.kubeletRoot, { recursive: true });
    const devicePlugins = join(o.dir, 'device-plugins');
    await mkdir(devicePlugins, { recursive: true });
    // The mount point; the kubelet would make it there anyway.
    await mkdir(KUBELET_DEVICE_PLUGINS, { recursive: true });

    const cgroupRoot = join(ownCgroupBase(), network.cgroupRoot);
    const record: NodeRecord = {
      cgroupRoot,
      createdCgroupDirs: [],
      bridge: network.bridge,
      slotLockFile: o.slot.lockFile,
      owner: process.pid,
    };
    // Leftovers of an earlier owner of this slot that the sweep could not reach.
    clearNode(record);
    const tracked: NodeRecord = { ...record, createdCgroupDirs: createCgroupRoot(cgroupRoot) };
    trackNode(tracked);
    const processes: ManagedProcess[] = [];
    let forwarder: TcpForwarder | undefined;
    try {
      createBridge(network);
      forwarder = await forwardTcp(network.apiServiceIp, 443, o.apiPort);
      await writeNodeFiles(o, paths, network, { ...network, cgroupRoot });

      const containerd = new ManagedProcess(
        `containerd(${o.name})`,
        o.binaries.containerd,
        ['--config', paths.containerdConfig],
        join(o.dir, 'containerd.log'),
        {
          launcher: [
            o.binaries.unshare,
            '--mount',
            '--propagation',
            'slave',
            '--',
            'sh',
            '-c',
            // In the new namespace: this node's device-plugin folder over the machine's, then exec.
            `mount --bind "$0" ${KUBELET_DEVICE_PLUGINS} && exec "$@"`,
            devicePlugins,
          ],
        },
      );
      containerd.start();
      processes.push(containerd);
      const pid = containerd.pid;
      if (pid === undefined)
        throw new ControlPlaneError(`containerd exited at once:\n${containerd.logTail()}`);
      // Before any shim exists: the shims and containers inherit it.
      moveToRuntimeCgroup(cgroupRoot, pid);
      await importPause(o.binaries, paths, containerd);

      const kubelet = new ManagedProcess(
        `kubelet(${o.name})`,
        o.binaries.kubelet,
        [
          `--config=${paths.kubeletConfig}`,
          `--kubeconfig=${join(o.dir, 'kubelet.kubeconfig')}`,
          `--root-dir=${paths.kubeletRoot}`,
          `--hostname-override=${o.name}`,
          `--node-ip=${network.nodeIp}`,
          '--v=1',
        ],
        join(o.dir, 'kubelet.log'),
        // The kubelet shares containerd's mount namespace: its volume mounts are the ones the
        // containers get, and they vanish with the namespace.
        { launcher: [o.binaries.nsenter, `--target=${pid}`, '--mount', '--'] },
      );
      kubelet.start();
      processes.push(kubelet);
      processes.push(startControllerManager(o, paths), startScheduler(o));
      await waitNodeReady(o.admin.makeApiClient(CoreV1Api), o.name, processes);
      const startMs = Date.now() - started;
      o.log?.(`node ${o.name} Ready in ${(startMs / 1000).toFixed(1)} s`);
      return new LocalNode(o.name, network, paths, tracked, processes, forwarder, o.slot, startMs);
    } catch (error) {
      await stopAll(processes, tracked, forwarder, o.slot);
      throw error;
    }
  }

  /** The cgroup (below every hierarchy) that holds containerd, its shims and every container. */
  get cgroupRoot(): string {
    return this.record.cgroupRoot;
  }

  /** The ClusterIP of `default/kubernetes` that Pods reach the API server on. */
  get apiServiceIp(): string {
    return this.network.apiServiceIp;
  }

  /**
   * Tells containerd how to reach a registry (its `hosts.toml`): plain HTTP on this machine's
   * loopback, as the local registries serve. Takes effect for the next pull.
   */
  async addPlainHttpRegistry(host: string): Promise<void> {
    const dir = join(this.paths.registryHostsDir, host);
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'hosts.toml'),
      `server = "http://${host}"\n\n[host."http://${host}"]\n  capabilities = ["pull", "resolve"]\n`,
    );
  }

  /**
   * Makes a port on this machine's loopback (a local registry) reachable from Pods, at the same
   * port on the node's IP (the bridge's address); returns that `host:port`. Pods cannot reach
   * loopback, and the registries listen nowhere else.
   */
  async exposeToPods(port: number): Promise<string> {
    this.exposed.push(await forwardTcp(this.network.nodeIp, port, port));
    return `${this.network.nodeIp}:${port}`;
  }

  /** Stops the control loops and the kubelet, then kills containerd and every container. */
  async stop(): Promise<void> {
    await Promise.all(this.exposed.splice(0).map((f) => f.close()));
    await stopAll(this.processes, this.record, this.forwarder, this.slot);
  }
}

function nodePaths(dir: string, binaries: NodeBinaries): NodePaths {
  return {
    dir,
    containerdConfig: join(dir, 'containerd.toml'),
    containerdSocket: join(dir, 'containerd.sock'),
    containerdRoot: join(dir, 'containerd', 'root'),
    containerdState: join(dir, 'containerd', 'state'),
    runcRoot: join(dir, 'containerd', 'runc'),
    cniConfDir: join(dir, 'cni'),
    cniBinDir: binaries.cniBinDir,
    registryHostsDir: join(dir, 'registries'),
    kubeletConfig: join(dir, 'kubelet.yaml'),
    kubeletRoot: join(dir, 'kubelet'),
    podLogsDir: join(dir, 'pod-logs'),
    ipamDataDir: join(dir, 'ipam'),
    caFile: join(dir, 'ca.crt'),
  };
}

async function writeNodeFiles(
  o: LocalNodeOptions,
  paths: NodePaths,
  network: NodeNetwork,
  kubeletNetwork: NodeNetwork,
): Promise<void> {
  const server = `https://127.0.0.1:${o.apiPort}`;
  const identities = [
    ['kubelet', `system:node:${o.name}`, ['system:nodes']],
    ['kube-controller-manager', 'system:kube-controller-manager', []],
    ['kube-scheduler', 'system:kube-scheduler', []],
  ] as const;
  for (const [file, commonName, organizations] of identities) {
    const cert = await issueCertificate(o.ca, { commonName, organizations, usage: 'client' });
    const kubeconfig = renderKubeconfig({
      name: o.name,
      server,
      caPem: o.ca.certPem,
      clientCertPem: cert.certPem,
      clientKeyPem: cert.keyPem,
    });
    await writeFile(join(o.dir, `${file}.kubeconfig`), kubeconfig, { mode: 0o600 });
  }
  await writeFile(paths.caFile, o.ca.certPem);
  await writeFile(join(o.dir, 'ca.key'), o.ca.keyPem, { mode: 0o600 });
  await writeFile(paths.containerdConfig, containerdConfig(paths, o.binaries.runc, o.binaries.pause.tag));
  await writeFile(join(paths.cniConfDir, '10-rtb.conflist'), cniConflist(network, paths.ipamDataDir));
  await writeFile(paths.kubeletConfig, kubeletConfig(paths, kubeletNetwork));
}

function createBridge(network: NodeNetwork): void {
  const ip = (...args: string[]): void => {
    const result = spawnSync('ip', args, { encoding: 'utf8' });
    if (result.status !== 0)
      throw new ControlPlaneError(`ip ${args.join(' ')} failed: ${result.stderr || String(result.error)}`);
  };
  ip('link', 'add', network.bridge, 'type', 'bridge');
  ip('link', 'set', network.bridge, 'address', network.bridgeMac);
  ip('addr', 'add', `${network.nodeIp}/24`, 'dev', network.bridge);
  ip('addr', 'add', `${network.apiServiceIp}/32`, 'dev', network.bridge);
  ip('link', 'set', network.bridge, 'up');
}

async function importPause(
  binaries: NodeBinaries,
  paths: NodePaths,
  containerd: ManagedProcess,
): Promise<void> {
  const ctr = (args: string[]): Promise<string> =>
    runCommand(binaries.ctr, ['--address', paths.containerdSocket, '--namespace', 'k8s.io', ...args]);
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await ctr(['version']);
      break;
    } catch (error) {
      if (!containerd.running || Date.now() > deadline)
        throw new ControlPlaneError(`containerd did not answer:\n${containerd.logTail()}`, { cause: error });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await ctr(['images', 'import', '--base-name', PAUSE_IMAGE_NAME, binaries.pause.archive]);
}

/** Flags both control loops share: their identity, no serving port, no leader election. */
function controlLoopArgs(o: LocalNodeOptions, name: string): string[] {
  const kubeconfig = join(o.dir, `${name}.kubeconfig`);
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1',
    '--secure-port=0',
    '--leader-elect=false',
    '--v=1',
  ];
}

function startControllerManager(o: LocalNodeOptions, paths: NodePaths): ManagedProcess {
  const proc = new ManagedProcess(
    `kube-controller-manager(${o.name})`,
    o.binaries.kubeControllerManager,
    [
      ...controlLoopArgs(o, 'kube-controller-manager'),
      '--use-service-account-credentials=true',
      `--root-ca-file=${paths.caFile}`,
      `--service-account-private-key-file=${o.serviceAccountKeyFile}`,
      `--cluster-signing-cert-file=${paths.caFile}`,
      `--cluster-signing-key-file=${join(o.dir, 'ca.key')}`,
      '--feature-gates=ClusterTrustBundle=true',
    ],
    join(o.dir, 'kube-controller-manager.log'),
  );
  proc.start();
  return proc;
}

function startScheduler(o: LocalNodeOptions): ManagedProcess {
  const proc = new ManagedProcess(
    `kube-scheduler(${o.name})`,
    o.binaries.kubeScheduler,
    controlLoopArgs(o, 'kube-scheduler'),
    join(o.dir, 'kube-scheduler.log'),
  );
  proc.start();
  return proc;
}

async function stopAll(
  processes: readonly ManagedProcess[],
  record: NodeRecord,
  forwarder: TcpForwarder | undefined,
  slot: NodeSlot,
): Promise<void> {
  // The control loops and the kubelet first (nothing restarts a container), then the rest by cgroup.
  const [containerd, ...others] = processes;
  await Promise.all(others.map((p) => p.stop(5_000)));
  releaseNodeResources(record);
  untrackNode(record);
  await containerd?.stop(1_000);
  await forwarder?.close();
  slot.release();
}
