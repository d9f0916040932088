import { KubeConfig } from '@kubernetes/client-node';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveBinaries, type ControlPlaneBinaries } from './binaries.js';
import { createClusterPki, type ClusterPki } from './cluster-pki.js';
import { ControlPlaneError } from './errors.js';
import { recordFailOpens } from './fail-open-tally.js';
import { startEtcd, type EtcdServer } from './etcd.js';
import { freePort } from './free-port.js';
import { startKubeApiserver } from './kube-apiserver.js';
import { planeKubernetesVersion, type KubernetesVersion } from './kubernetes-versions.js';
import { renderKubeconfig } from './kubeconfig.js';
import { LocalNode } from './local-node.js';
import type { ManagedProcess } from './managed-process.js';
import { resolveNodeBinaries, type NodeBinaries } from './node-binaries.js';
import { acquireNodeSlot, type NodeSlot } from './node-slot.js';
import { trackTempDir, untrackTempDir } from './process-registry.js';

/** Options for a local control plane. */
export interface ControlPlaneOptions {
  /** Cluster names, or how many (named `cluster-0`…). Default one. */
  clusters?: number | readonly string[];
  /**
   * The Kubernetes minor of every API server (docs/kubernetes-versions.md). Default: that of
   * `binaries` when given, else `RTB_TEST_KUBERNETES`, else DEFAULT_KUBERNETES_VERSION. A plane
   * with nodes runs the node's minor (NODE_KUBERNETES_VERSION) and refuses another.
   */
  kubernetes?: KubernetesVersion;
  /** Reuse these binaries instead of resolving (and maybe building) them. */
  binaries?: ControlPlaneBinaries;
  /** Keep the working directory (logs, kubeconfigs) after stop. */
  keepDir?: boolean;
  /**
   * false: every API server runs with the ClusterTrustBundleProjection gate off and drops
   * projected clusterTrustBundle sources from Pods, as a runtime without the projection does.
   */
  clusterTrustBundleProjection?: boolean;
  /**
   * Extra kube-apiserver flags for every cluster, after the others: a repeated `--feature-gates`
   * or `--runtime-config` merges into the earlier one, key by key.
   */
  apiserverArgs?: readonly string[];
  /**
   * Clusters (by name) that get a node: kubelet, containerd, controller-manager and scheduler,
   * so that Pods run (docs/node.md). The others stay API servers only, as fast as ever. Such a
   * plane runs the node's Kubernetes minor.
   */
  nodes?: readonly string[];
  /** Reuse these node binaries instead of resolving (and maybe building) them. */
  nodeBinaries?: NodeBinaries;
  log?: (line: string) => void;
}

/**
 * How long a stopping API server may take: idle, it exits within about a second, but a watch still
 * open holds it (Go's graceful shutdown) until its own much later deadline. Its state is in etcd,
 * so nothing is lost by ending it then.
 */
const API_SERVER_STOP_GRACE_MS = 3_000;

/** One independent cluster: its own kube-apiserver and its own prefix in the shared etcd. */
export class LocalCluster {
  private process: ManagedProcess | undefined;
  /** The cluster's node, when it has one. */
  node: LocalNode | undefined;

  constructor(
    readonly name: string,
    readonly port: number,
    readonly dir: string,
    readonly kubeconfigPath: string,
    readonly kubeconfig: string,
    private readonly pki: ClusterPki,
    private readonly launch: () => Promise<ManagedProcess>,
    initial: ManagedProcess,
  ) {
    this.process = initial;
  }

  /** `https://127.0.0.1:<port>`. */
  get server(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** PEM of the cluster CA (what a client trusts and what signs client certificates). */
  get caPem(): string {
    return this.pki.ca.certPem;
  }

  /** The cluster's CA with its key, to issue further client certificates in tests. */
  get ca(): ClusterPki['ca'] {
    return this.pki.ca;
  }

  /** PID of the running kube-apiserver. */
  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Whether the API server runs. */
  get running(): boolean {
    return this.process?.running ?? false;
  }

  /** A fresh @kubernetes/client-node KubeConfig for the admin user. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromString(this.kubeconfig);
    return kc;
  }

  /** Starts (or restarts) the API server on the same port with the same certificates. */
  async start(): Promise<void> {
    if (this.running) return;
    this.process = await this.launch();
  }

  /** Stops the API server; its data stays in etcd, so start() brings the same cluster back. */
  async stop(): Promise<void> {
    // Its counters end with the process: a restart inside a test must not lose them.
    await recordFailOpens([this]);
    await this.process?.stop(API_SERVER_STOP_GRACE_MS);
  }
}

/**
 * A real local control plane for tests and the local landscape: one etcd and N
 * kube-apiservers on it, each with its own `--etcd-prefix`, on free loopback ports.
 */
export class ControlPlane {
  private readonly clusterList: LocalCluster[] = [];
  private stopped = false;
  private nodeBinaries: NodeBinaries | undefined;

  private constructor(
    readonly dir: string,
    /** The binaries every API server runs; `binaries.kubernetes` is the plane's minor. */
    readonly binaries: ControlPlaneBinaries,
    readonly etcd: EtcdServer,
    private readonly options: ControlPlaneOptions,
  ) {}

  /** Resolves the binaries, starts etcd and the clusters, and waits until every one is ready. */
  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const kubernetes = planeKubernetesVersion({
      kubernetes: options.kubernetes,
      binaries: options.binaries?.kubernetes,
      nodes: (options.nodes?.length ?? 0) > 0,
    });
    const binaries = options.binaries ?? (await resolveBinaries({ log: options.log, kubernetes }));
    const dir = await mkdtemp(join(tmpdir(), 'rtb-envtest-'));
    if (!options.keepDir) trackTempDir(dir);
    let etcd: EtcdServer | undefined;
    try {
      etcd = await startEtcd(binaries.etcd, join(dir, 'etcd'));
      const plane = new ControlPlane(dir, binaries, etcd, options);
      plane.nodeBinaries = options.nodeBinaries;
      const spec = options.clusters ?? 1;
      const names = typeof spec === 'number' ? Array.from({ length: spec }, (_, i) => `cluster-${i}`) : spec;
      try {
        await Promise.all(names.map((n) => plane.addCluster(n, { node: options.nodes?.includes(n) })));
        // They start concurrently; keep the order the caller gave.
        plane.clusterList.sort((a, b) => names.indexOf(a.name) - names.indexOf(b.name));
      } catch (error) {
        await plane.stop();
        throw error;
      }
      return plane;
    } catch (error) {
      await etcd?.stop();
      if (!options.keepDir) {
        await rm(dir, { recursive: true, force: true });
        untrackTempDir(dir);
      }
      throw error;
    }
  }

  /** The Kubernetes minor every API server of this plane runs. */
  get kubernetes(): KubernetesVersion {
    return this.binaries.kubernetes;
  }

  /** The clusters, in the order they were added. */
  get clusters(): readonly LocalCluster[] {
    return this.clusterList;
  }

  /** The cluster of that name; throws if there is none. */
  cluster(name: string): LocalCluster {
    const found = this.clusterList.find((c) => c.name === name);
    if (!found) throw new ControlPlaneError(`no cluster named ${name}`);
    return found;
  }

  /** Adds one more independent cluster on the shared etcd, with a node if asked. */
  async addCluster(name: string, options: { node?: boolean } = {}): Promise<LocalCluster> {
    if (this.stopped) throw new ControlPlaneError('the control plane is stopped');
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
      throw new ControlPlaneError(`invalid cluster name ${name}`);
    if (this.clusterList.some((c) => c.name === name))
      throw new ControlPlaneError(`duplicate cluster ${name}`);
    // Throws when a node would join API servers of another minor than its kubelet's.
    if (options.node) planeKubernetesVersion({ kubernetes: this.kubernetes, nodes: true });
    const dir = join(this.dir, name);
    await mkdir(dir, { recursive: true });
    const nodeBinaries = options.node ? await this.resolveNodeBinaries() : undefined;
    const slot = options.node ? await acquireNodeSlot() : undefined;
    try {
      return await this.startCluster(name, dir, slot, nodeBinaries);
    } catch (error) {
      slot?.release();
      throw error;
    }
  }

  private async resolveNodeBinaries(): Promise<NodeBinaries> {
    this.nodeBinaries ??= await resolveNodeBinaries({ log: this.options.log });
    return this.nodeBinaries;
  }

  private async startCluster(
    name: string,
    dir: string,
    slot: NodeSlot | undefined,
    nodeBinaries: NodeBinaries | undefined,
  ): Promise<LocalCluster> {
    const network = slot?.network;
    const pki = await createClusterPki(dir, name, network ? [network.apiServiceIp] : []);
    const readyTls = { ca: pki.ca.certPem, cert: pki.adminCertPem, key: pki.adminKeyPem };
    let port = await freePort();
    let everStarted = false;
    const launch = async (): Promise<ManagedProcess> => {
      let lastError: unknown;
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          return await startKubeApiserver(
            {
              binary: this.binaries.kubeApiserver,
              dir,
              etcdUrl: this.etcd.url,
              etcdPrefix: `/clusters/${name}`,
              port,
              pki: pki.files,
              kubernetes: this.kubernetes,
              clusterTrustBundleProjection: this.options.clusterTrustBundleProjection,
              extraArgs: this.options.apiserverArgs,
              node: network ? { serviceCidr: network.serviceCidr } : undefined,
            },
            readyTls,
          );
        } catch (error) {
          lastError = error;
          // Only a lost race for the port is worth another try on the first start.
          const inUse = error instanceof Error && /address already in use/.test(error.message);
          if (!inUse || everStarted) throw error;
          port = await freePort();
        }
      }
      throw lastError;
    };
    const kubeconfigPath = join(dir, 'kubeconfig');
    const first = await launch();
    everStarted = true;
    const kubeconfig = renderKubeconfig({
      name,
      server: `https://127.0.0.1:${port}`,
      caPem: pki.ca.certPem,
      clientCertPem: pki.adminCertPem,
      clientKeyPem: pki.adminKeyPem,
    });
    await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
    const cluster = new LocalCluster(name, port, dir, kubeconfigPath, kubeconfig, pki, launch, first);
    this.clusterList.push(cluster);
    if (slot && nodeBinaries) {
      cluster.node = await LocalNode.start({
        name: `${name}-node`,
        dir: join(dir, 'node'),
        apiPort: port,
        ca: pki.ca,
        serviceAccountKeyFile: pki.files.serviceAccountKey,
        admin: cluster.kubeConfig(),
        slot,
        binaries: nodeBinaries,
        log: this.options.log,
      });
    }
    return cluster;
  }

  /** Stops every API server, then etcd, and removes the working directory (unless kept). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // Nodes first, while their API servers still answer the kubelets.
    await Promise.all(this.clusterList.flatMap((c) => (c.node ? [c.node.stop()] : [])));
    await Promise.all(this.clusterList.map((c) => c.stop()));
    await this.etcd.stop();
    if (!this.options.keepDir) {
      await rm(this.dir, { recursive: true, force: true });
      untrackTempDir(this.dir);
    }
  }
}
