import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { requiredVersion } from '../../../src/envtest/go-binary.js';
import {
  cniConflist,
  containerdConfig,
  kubeletConfig,
  type NodePaths,
} from '../../../src/envtest/node-config.js';
import { MAX_NODE_SLOTS, nodeNetwork } from '../../../src/envtest/node-network.js';
import { kubeApiserverArgs } from '../../../src/envtest/kube-apiserver.js';
import { KUBERNETES_VERSIONS, NODE_KUBERNETES_VERSION } from '../../../src/envtest/kubernetes-versions.js';
import { APISERVER_BASE } from './apiserver-base.js';

const paths: NodePaths = {
  dir: '/n',
  containerdConfig: '/n/containerd.toml',
  containerdSocket: '/n/containerd.sock',
  containerdRoot: '/n/containerd/root',
  containerdState: '/n/containerd/state',
  runcRoot: '/n/containerd/runc',
  cniConfDir: '/n/cni',
  cniBinDir: '/usr/lib/cni',
  registryHostsDir: '/n/registries',
  kubeletConfig: '/n/kubelet.yaml',
  kubeletRoot: '/n/kubelet',
  podLogsDir: '/n/pod-logs',
  ipamDataDir: '/n/ipam',
  caFile: '/n/ca.crt',
};

describe('node network', () => {
  test('slots never share a bridge, subnet or cgroup', () => {
    const seen = new Set<string>();
    for (let slot = 0; slot < MAX_NODE_SLOTS; slot++) {
      const n = nodeNetwork(slot);
      for (const value of [
        n.bridge,
        n.bridgeMac,
        n.podCidr,
        n.serviceCidr,
        n.cgroupRoot,
        n.nodeIp,
        n.apiServiceIp,
      ]) {
        assert.ok(!seen.has(value), `${value} reused by slot ${slot}`);
        seen.add(value);
      }
      assert.ok(n.bridge.length <= 15, 'Linux interface names have at most 15 characters');
      // Unicast and locally administered: the first octet's low two bits are 1 0.
      assert.match(n.bridgeMac, /^02(:[0-9a-f]{2}){5}$/);
      assert.ok(n.podCidr.startsWith(n.nodeIp.replace(/\.1$/, '.')));
      assert.equal(n.apiServiceIp, n.serviceCidr.replace('.0/24', '.1'));
    }
  });

  test('refuses a slot outside the range', () => {
    assert.throws(() => nodeNetwork(MAX_NODE_SLOTS), RangeError);
    assert.throws(() => nodeNetwork(-1), RangeError);
    assert.throws(() => nodeNetwork(1.5), RangeError);
  });
});

describe('node configuration', () => {
  const network = nodeNetwork(7);

  test('kubelet runs with cgroupfs under the node cgroup, v1 allowed, on the node IP', () => {
    const config = parse(kubeletConfig(paths, network)) as Record<string, unknown>;
    assert.equal(config.cgroupDriver, 'cgroupfs');
    assert.equal(config.cgroupRoot, '/rtbnode7');
    assert.equal(config.failCgroupV1, false);
    assert.equal(config.address, '10.213.7.1');
    assert.equal(config.containerRuntimeEndpoint, 'unix:///n/containerd.sock');
    assert.equal(config.podLogsDir, '/n/pod-logs');
    assert.deepEqual(config.featureGates, { ClusterTrustBundleProjection: true });
  });

  test('kubelet resyncs Pods every second: a Pod not Ready yet is probed again at each resync', () => {
    const config = parse(kubeletConfig(paths, network)) as Record<string, unknown>;
    // The readiness probe's period is 10 s; the resync's manual trigger is what makes a webhook
    // Pod Ready soon after it serves (docs/figures.md, `npm start`).
    assert.equal(config.syncFrequency, '1s');
  });

  test('containerd keeps its state in the node folder and clamps oom_score_adj', () => {
    const toml = containerdConfig(paths, '/usr/sbin/runc', '3.10.1');
    for (const line of [
      'root = "/n/containerd/root"',
      'address = "/n/containerd.sock"',
      'sandbox_image = "localhost/rt-bootstrapper/pause:3.10.1"',
      'restrict_oom_score_adj = true',
      'SystemdCgroup = false',
      'Root = "/n/containerd/runc"',
      'config_path = "/n/registries"',
    ]) {
      assert.ok(toml.includes(line), `missing ${line}`);
    }
  });

  test('the CNI bridge is the node bridge with leases in the node folder and no masquerading', () => {
    const conf = JSON.parse(cniConflist(network, '/n/ipam')) as {
      plugins: {
        type: string;
        bridge?: string;
        ipMasq?: boolean;
        ipam?: { dataDir: string; ranges: unknown };
      }[];
    };
    const bridge = conf.plugins.find((p) => p.type === 'bridge');
    assert.ok(bridge?.ipam);
    assert.equal(bridge.bridge, 'rtbnode7');
    assert.equal(bridge.ipMasq, false);
    const ipam = bridge.ipam;
    assert.equal(ipam.dataDir, '/n/ipam');
    assert.deepEqual(ipam.ranges, [[{ subnet: '10.213.7.0/24', gateway: '10.213.7.1' }]]);
  });

  test('an API server with a node authorizes nodes and admits ServiceAccounts; one without does not', () => {
    const base = { ...APISERVER_BASE, kubernetes: NODE_KUBERNETES_VERSION };
    const withNode = kubeApiserverArgs({ ...base, node: { serviceCidr: network.serviceCidr } });
    assert.ok(withNode.includes('--authorization-mode=Node,RBAC'));
    assert.ok(withNode.includes('--service-cluster-ip-range=10.214.7.0/24'));
    assert.ok(withNode.includes('--enable-aggregator-routing=true'));
    assert.ok(!withNode.some((a) => a.startsWith('--disable-admission-plugins')));
    const without = kubeApiserverArgs(base);
    assert.ok(without.includes('--authorization-mode=RBAC'));
    assert.ok(without.includes('--disable-admission-plugins=ServiceAccount'));
  });
});

test("the node binaries and the node's kube-apiserver come from the same Kubernetes release", () => {
  const version = (dir: string): string =>
    requiredVersion(
      readFileSync(new URL(`../../../hack/${dir}/go.mod`, import.meta.url), 'utf8'),
      'k8s.io/kubernetes',
    );
  const apiserver = `control-plane/${KUBERNETES_VERSIONS[NODE_KUBERNETES_VERSION].module}`;
  assert.equal(version('node'), version(apiserver));
});
