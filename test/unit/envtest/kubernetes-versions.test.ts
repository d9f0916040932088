import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { apiserverModuleDir, controlPlaneModules } from '../../../src/envtest/binaries.js';
import { requiredVersion } from '../../../src/envtest/go-binary.js';
import { kubeApiserverArgs } from '../../../src/envtest/kube-apiserver.js';
import {
  DEFAULT_KUBERNETES_VERSION,
  KUBERNETES_VERSION_LIST,
  KUBERNETES_VERSIONS,
  MATRIX_KUBERNETES_VERSIONS,
  NEWEST_KUBERNETES_VERSION,
  NODE_KUBERNETES_VERSION,
  defaultKubernetesVersion,
  parseKubernetesVersion,
  planeKubernetesVersion,
  versionApiserverArgs,
} from '../../../src/envtest/kubernetes-versions.js';
import { APISERVER_BASE } from './apiserver-base.js';

const pinned = (dir: string): string =>
  requiredVersion(readFileSync(`${dir}/go.mod`, 'utf8'), 'k8s.io/kubernetes');

describe('the pinned Kubernetes versions', () => {
  test('each minor names a module that pins that minor, oldest first', () => {
    assert.deepEqual(KUBERNETES_VERSION_LIST, ['1.34', '1.37']);
    for (const version of KUBERNETES_VERSION_LIST) {
      assert.match(
        pinned(apiserverModuleDir(version)),
        new RegExp(`^v${version.replace('.', '\\.')}\\.\\d+$`),
      );
    }
    assert.equal(NEWEST_KUBERNETES_VERSION, KUBERNETES_VERSION_LIST.at(-1));
  });

  test('1.34 turns the beta gates and the v1beta1 resource on', () => {
    assert.deepEqual(versionApiserverArgs('1.34'), [
      '--feature-gates=ClusterTrustBundle=true,ClusterTrustBundleProjection=true',
      '--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true',
    ]);
    assert.equal(KUBERNETES_VERSIONS['1.34'].clusterTrustBundleApi, 'v1beta1');
  });

  test('1.37 relies on the GA defaults and switches v1beta1 off', () => {
    const args = versionApiserverArgs('1.37');
    assert.deepEqual(args, ['--runtime-config=certificates.k8s.io/v1beta1=false']);
    assert.ok(!args.some((a) => a.startsWith('--feature-gates')));
    assert.equal(KUBERNETES_VERSIONS['1.37'].clusterTrustBundleApi, 'v1');
  });

  test('MutatingAdmissionPolicy: v1beta1 behind its gate on 1.34, v1 by default on 1.37', () => {
    assert.deepEqual(KUBERNETES_VERSIONS['1.34'].admissionPolicy, {
      api: 'v1beta1',
      apiserverArgs: [
        '--feature-gates=MutatingAdmissionPolicy=true',
        '--runtime-config=admissionregistration.k8s.io/v1beta1=true',
      ],
    });
    assert.deepEqual(KUBERNETES_VERSIONS['1.37'].admissionPolicy, { api: 'v1', apiserverArgs: [] });
    // As extra flags they merge into the minor's own --feature-gates and --runtime-config.
    const args = kubeApiserverArgs({
      ...APISERVER_BASE,
      kubernetes: '1.34',
      extraArgs: KUBERNETES_VERSIONS['1.34'].admissionPolicy.apiserverArgs,
    });
    assert.deepEqual(args.slice(-2), [...KUBERNETES_VERSIONS['1.34'].admissionPolicy.apiserverArgs]);
  });

  test('the projection can be switched off on every minor, after the minor flags', () => {
    for (const version of KUBERNETES_VERSION_LIST) {
      const args = versionApiserverArgs(version, { clusterTrustBundleProjection: false });
      assert.equal(args.at(-1), '--feature-gates=ClusterTrustBundleProjection=false');
      assert.deepEqual(versionApiserverArgs(version, { clusterTrustBundleProjection: true }), [
        ...KUBERNETES_VERSIONS[version].apiserverArgs,
      ]);
    }
  });

  test('kube-apiserver gets the flags of its minor, extra flags last', () => {
    const base = APISERVER_BASE;
    const old = kubeApiserverArgs({ ...base, kubernetes: '1.34' });
    assert.ok(old.includes('--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true'));
    const next = kubeApiserverArgs({ ...base, kubernetes: '1.37', extraArgs: ['--v=2'] });
    assert.ok(next.includes('--runtime-config=certificates.k8s.io/v1beta1=false'));
    assert.ok(!next.some((a) => a.includes('clustertrustbundles=true')));
    assert.equal(next.at(-1), '--v=2');
  });

  test('kube-apiserver is built from the minor, kubectl from the newest, etcd once', () => {
    const dirs = (version: '1.34' | '1.37'): Record<string, string> =>
      Object.fromEntries(controlPlaneModules(version).map((m) => [m.binary, m.dir]));
    assert.equal(dirs('1.34')['kube-apiserver'], apiserverModuleDir('1.34'));
    assert.equal(dirs('1.37')['kube-apiserver'], apiserverModuleDir('1.37'));
    assert.equal(dirs('1.34').kubectl, apiserverModuleDir(NEWEST_KUBERNETES_VERSION));
    assert.equal(dirs('1.34').etcd, dirs('1.37').etcd);
  });
});

describe('which minor a control plane runs', () => {
  test('the default is one constant, RTB_TEST_KUBERNETES overrides it', () => {
    assert.equal(defaultKubernetesVersion({}), DEFAULT_KUBERNETES_VERSION);
    assert.equal(defaultKubernetesVersion({ RTB_TEST_KUBERNETES: '' }), DEFAULT_KUBERNETES_VERSION);
    assert.equal(defaultKubernetesVersion({ RTB_TEST_KUBERNETES: '1.37' }), '1.37');
    assert.equal(defaultKubernetesVersion({ RTB_TEST_KUBERNETES: 'v1.34' }), '1.34');
    assert.throws(
      () => defaultKubernetesVersion({ RTB_TEST_KUBERNETES: '1.35' }),
      /RTB_TEST_KUBERNETES "1\.35" is not pinned here; pinned: 1\.34, 1\.37/,
    );
    assert.throws(() => parseKubernetesVersion('1.37.2'), /not pinned/);
  });

  test('asked for, or the minor of the binaries handed in, wins over the process default', () => {
    const env = { RTB_TEST_KUBERNETES: '1.37' };
    assert.equal(planeKubernetesVersion({}, env), '1.37');
    assert.equal(planeKubernetesVersion({ kubernetes: '1.34' }, env), '1.34');
    assert.equal(planeKubernetesVersion({ binaries: '1.34' }, env), '1.34');
    assert.throws(
      () => planeKubernetesVersion({ kubernetes: '1.37', binaries: '1.34' }),
      /binaries handed in are for Kubernetes 1\.34/,
    );
  });

  test("a plane with nodes runs the node's minor and refuses another", () => {
    assert.equal(NODE_KUBERNETES_VERSION, '1.34');
    assert.equal(planeKubernetesVersion({ nodes: true }, { RTB_TEST_KUBERNETES: '1.37' }), '1.34');
    assert.equal(planeKubernetesVersion({ nodes: true, kubernetes: '1.34' }), '1.34');
    assert.throws(
      () => planeKubernetesVersion({ nodes: true, kubernetes: '1.37' }),
      /a cluster with a node runs Kubernetes 1\.34 .*not 1\.37/,
    );
  });

  test('the matrix holds pinned minors only', () => {
    for (const v of MATRIX_KUBERNETES_VERSIONS) assert.ok(KUBERNETES_VERSION_LIST.includes(v));
  });
});
