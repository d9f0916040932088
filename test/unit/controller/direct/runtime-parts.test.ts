import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stringify } from 'yaml';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { decideMirror } from '../../../../src/controller/direct/runtime-mirror.js';
import {
  RuntimeClientPool,
  RuntimeKubeconfigError,
} from '../../../../src/controller/direct/runtime-clients.js';
import { renderKubeconfig } from '../../../../src/envtest/kubeconfig.js';

/** A kubeconfig Secret's value (base64), as the pool takes it. */
const kubeconfig = (server: string) =>
  b64(renderKubeconfig({ name: 'x', server, caPem: 'CA', clientCertPem: 'C', clientKeyPem: 'K' }));
const b64 = (text: string): string => Buffer.from(text).toString('base64');

describe('runtime client pool', () => {
  test('one client per runtime, rebuilt when the kubeconfig changes, dropped when idle', () => {
    let now = 0;
    const pool = new RuntimeClientPool({ idleMs: 1_000, now: () => now });
    const a = pool.get('rt-1', kubeconfig('https://a:6443'));
    assert.equal(pool.get('rt-1', kubeconfig('https://a:6443')), a);
    const rotated = pool.get('rt-1', kubeconfig('https://b:6443'));
    assert.notEqual(rotated, a);
    assert.equal(rotated.getCurrentCluster()?.server, 'https://b:6443');
    pool.get('rt-2', kubeconfig('https://c:6443'));
    now = 500;
    pool.get('rt-2', kubeconfig('https://c:6443'));
    now = 1_200;
    assert.equal(pool.sweep(), 1);
    assert.equal(pool.size, 1);
  });

  test('a sweep lets go of idle TLS contexts before it drops the client itself', () => {
    let now = 0;
    const pool = new RuntimeClientPool({ idleMs: 10_000, now: () => now, tlsIdleMs: 1_000 });
    const client = pool.get('rt-1', kubeconfig('https://a:6443'));
    const retired: number[] = [];
    (client as unknown as { retireIdle: (ms: number) => number }).retireIdle = (ms) => {
      retired.push(ms);
      return 0;
    };
    now = 5_000;
    assert.equal(pool.sweep(), 0);
    assert.deepEqual(retired, [1_000], 'the TLS contexts unused for 1 s');
    assert.equal(pool.get('rt-1', kubeconfig('https://a:6443')), client, 'the parsed client is kept');
    now = 16_000;
    assert.equal(pool.sweep(), 1);
    assert.equal(pool.size, 0);
  });

  test('a broken kubeconfig is a typed error that does not quote it', () => {
    const pool = new RuntimeClientPool();
    assert.throws(
      () => pool.get('rt-x', b64('token: s3cr3t-value\n: : :')),
      (e: unknown) => e instanceof RuntimeKubeconfigError && !e.message.includes('s3cr3t'),
    );
    assert.throws(
      () => pool.get('rt-x', b64('apiVersion: v1\nkind: Config\n')),
      (e: unknown) => e instanceof RuntimeKubeconfigError && /names no cluster/.test(e.message),
    );
  });

  test('a kubeconfig whose server is not https:// is refused, without quoting it', () => {
    const pool = new RuntimeClientPool();
    for (const server of ['http://user:s3cr3t@a:6443', 'HTTP://a:80', 'a:6443'])
      assert.throws(
        () => pool.get('rt-x', kubeconfig(server)),
        (e: unknown) =>
          e instanceof RuntimeKubeconfigError && /not https/.test(e.message) && !e.message.includes('s3cr3t'),
        server,
      );
    assert.ok(pool.get('rt-x', kubeconfig('HTTPS://a:6443')));
  });

  test('a kubeconfig the light loader does not serve (an exec plugin) is served by client-node', () => {
    const pool = new RuntimeClientPool();
    const text = stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: 'https://exec:6443' } }],
      users: [
        { name: 'u', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'true' } } },
      ],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    });
    const access = pool.get('rt-e', b64(text));
    assert.equal(access.getCurrentCluster()?.server, 'https://exec:6443');
    pool.stop();
  });
});

describe('runtime mirror decision', () => {
  const rb = (labels: Record<string, string> = {}, deleting = false): RuntimeBootstrapper => ({
    metadata: {
      name: 'r',
      namespace: 'kcp-system',
      labels,
      ...(deleting ? { deletionTimestamp: new Date() } : {}),
    },
    spec: { runtimeID: 'r' },
  });
  test('create for a Runtime without one; delete only what it created; nothing otherwise', () => {
    assert.equal(decideMirror(true, undefined), 'create');
    assert.equal(decideMirror(true, rb()), 'none');
    assert.equal(
      decideMirror(false, rb({ 'rt-bootstrapper.kyma-project.io/mirrors-runtime': 'true' })),
      'delete',
    );
    assert.equal(decideMirror(false, rb()), 'none', 'a hand-made bootstrapper stays');
    assert.equal(
      decideMirror(false, rb({ 'rt-bootstrapper.kyma-project.io/mirrors-runtime': 'true' }, true)),
      'none',
    );
    assert.equal(decideMirror(false, undefined), 'none');
  });
});
