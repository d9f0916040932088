/**
 * The addresses and names of one node, all derived from its slot (0–199), so that nodes of
 * several test processes on this machine never share a bridge, a subnet or a cgroup.
 * Pods get 10.213.<slot>.0/24 on bridge `rtbnode<slot>`, whose address 10.213.<slot>.1 is the
 * node's IP; Services get 10.214.<slot>.0/24, and the `kubernetes` Service's ClusterIP
 * (10.214.<slot>.1) is put on the bridge too, where the node forwards it to the API server.
 */
export interface NodeNetwork {
  readonly slot: number;
  readonly bridge: string;
  /**
   * The bridge's MAC address, set explicitly: a bridge whose address was not set takes the lowest
   * of its ports', so a Pod's new veth could change it, and every Pod's ARP entry for its gateway
   * went stale (connections to and from the Pods hung for seconds: calls to a webhook Pod timed out).
   */
  readonly bridgeMac: string;
  readonly podCidr: string;
  /** The bridge's address: the Pods' gateway and the node's InternalIP. */
  readonly nodeIp: string;
  readonly serviceCidr: string;
  /** ClusterIP of `default/kubernetes` (the first address of the Service range). */
  readonly apiServiceIp: string;
  /** kubelet's `cgroupRoot`; the runtime and every container live below it. */
  readonly cgroupRoot: string;
}

/** The most nodes this machine runs at once. */
export const MAX_NODE_SLOTS = 200;

/** The network of the node in `slot` (pure). */
export function nodeNetwork(slot: number): NodeNetwork {
  if (!Number.isInteger(slot) || slot < 0 || slot >= MAX_NODE_SLOTS)
    throw new RangeError(`node slot ${slot} is outside 0..${MAX_NODE_SLOTS - 1}`);
  return {
    slot,
    bridge: `rtbnode${slot}`,
    // Locally administered (02:…), one per slot.
    bridgeMac: `02:72:74:62:${(slot >> 8).toString(16).padStart(2, '0')}:${(slot & 0xff).toString(16).padStart(2, '0')}`,
    podCidr: `10.213.${slot}.0/24`,
    nodeIp: `10.213.${slot}.1`,
    serviceCidr: `10.214.${slot}.0/24`,
    apiServiceIp: `10.214.${slot}.1`,
    cgroupRoot: `/rtbnode${slot}`,
  };
}
