import { stringify } from 'yaml';
import type { NodeNetwork } from './node-network.js';

/** Files and folders of one node (all below the cluster's working folder). */
export interface NodePaths {
  readonly dir: string;
  readonly containerdConfig: string;
  readonly containerdSocket: string;
  readonly containerdRoot: string;
  readonly containerdState: string;
  /** runc's state folder (instead of the machine-wide /run/containerd/runc). */
  readonly runcRoot: string;
  readonly cniConfDir: string;
  readonly cniBinDir: string;
  /** containerd's per-registry host configuration (`<host>/hosts.toml`). */
  readonly registryHostsDir: string;
  readonly kubeletConfig: string;
  readonly kubeletRoot: string;
  /** Container logs (instead of the machine-wide /var/log/pods). */
  readonly podLogsDir: string;
  /** host-local's address leases (instead of the machine-wide /var/lib/cni/networks). */
  readonly ipamDataDir: string;
  readonly caFile: string;
}

/** The name of the sandbox (pause) image that the node builds and imports; never pulled. */
export const PAUSE_IMAGE_NAME = 'localhost/rt-bootstrapper/pause';

/**
 * containerd 1.6's configuration (version 2): its own root, state and sockets, so it shares
 * nothing with another containerd on the machine; runc with cgroupfs (the machine's cgroup v1
 * hierarchies; no systemd to delegate to); our pause image; CNI from Debian's plugins.
 */
export function containerdConfig(p: NodePaths, runc: string, pauseTag: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = ${JSON.stringify(p.containerdRoot)}
state = ${JSON.stringify(p.containerdState)}
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing",
]

[grpc]
  address = ${JSON.stringify(p.containerdSocket)}
[ttrpc]
  address = ${JSON.stringify(`${p.containerdSocket}.ttrpc`)}
[metrics]
  address = ""

[${cri}]
  sandbox_image = ${JSON.stringify(`${PAUSE_IMAGE_NAME}:${pauseTag}`)}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  # This machine grants root no CAP_SYS_RESOURCE: an oom_score_adj below containerd's own (the
  # sandbox's -998, a Guaranteed container's -997) is refused, so clamp it there.
  restrict_oom_score_adj = true
  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = ${JSON.stringify(runc)}
        Root = ${JSON.stringify(p.runcRoot)}
  [${cri}.cni]
    bin_dir = ${JSON.stringify(p.cniBinDir)}
    conf_dir = ${JSON.stringify(p.cniConfDir)}
  [${cri}.registry]
    config_path = ${JSON.stringify(p.registryHostsDir)}
`;
}

/**
 * The Pod network: Debian's bridge plugin on the node's own bridge (made beforehand, with the
 * gateway address), host-local addresses from the node's /24, no masquerading (nothing leaves
 * the machine), and loopback inside each Pod.
 */
export function cniConflist(network: NodeNetwork, ipamDataDir: string): string {
  return JSON.stringify(
    {
      cniVersion: '0.4.0',
      name: 'rtb',
      plugins: [
        {
          type: 'bridge',
          bridge: network.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: ipamDataDir,
            ranges: [[{ subnet: network.podCidr, gateway: network.nodeIp }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

/** The kubelet's HTTPS API port; on the node's own IP, so every node can use the usual one. */
export const KUBELET_PORT = 10250;
/** The kubelet's health endpoint (plain HTTP), on the node's IP too. */
export const KUBELET_HEALTHZ_PORT = 10248;

/**
 * The KubeletConfiguration that works on this machine (docs/node.md): cgroupfs driver under
 * the node's own cgroup root, cgroup v1 allowed, no eviction or node-allocatable enforcement
 * (the machine is shared with the tests), no swap check, fast status updates and Pod resyncs.
 */
export function kubeletConfig(p: NodePaths, network: NodeNetwork): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: network.nodeIp,
    port: KUBELET_PORT,
    readOnlyPort: 0,
    healthzBindAddress: network.nodeIp,
    healthzPort: KUBELET_HEALTHZ_PORT,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: p.caFile },
    },
    authorization: { mode: 'Webhook' },
    cgroupDriver: 'cgroupfs',
    cgroupRoot: network.cgroupRoot,
    cgroupsPerQOS: true,
    enforceNodeAllocatable: [],
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    imageServiceEndpoint: `unix://${p.containerdSocket}`,
    resolvConf: '/etc/resolv.conf',
    podLogsDir: p.podLogsDir,
    hairpinMode: 'hairpin-veth',
    serializeImagePulls: false,
    evictionHard: { 'memory.available': '0%', 'nodefs.available': '0%', 'imagefs.available': '0%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    localStorageCapacityIsolation: false,
    protectKernelDefaults: false,
    makeIPTablesUtilChains: false,
    // Each resync of a Pod that is not Ready yet runs its readiness probe at once (the prober's
    // manual trigger): at 1 s a webhook Pod is Ready about a second after it serves, where the
    // probe's own 10 s period left it unready up to 10 s longer, as often as not.
    syncFrequency: '1s',
    nodeStatusUpdateFrequency: '5s',
    nodeStatusReportFrequency: '10s',
    podPidsLimit: -1,
    featureGates: { ClusterTrustBundleProjection: true },
  });
}
