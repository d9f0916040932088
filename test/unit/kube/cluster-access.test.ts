import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, mock, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import {
  inClusterAccess,
  KubeconfigLite,
  loadClusterAccess,
  type ClusterAccess,
} from '../../../src/kube/cluster-access.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** What a request gets from a kubeconfig: everything applyToHTTPSOptions sets. */
async function applied(access: ClusterAccess): Promise<Record<string, unknown>> {
  const opts: https.RequestOptions = {};
  await access.applyToHTTPSOptions(opts);
  const agent = opts.agent as (http.Agent & { options: https.AgentOptions }) | undefined;
  const { agent: _agent, ...rest } = opts;
  return {
    ...rest,
    server: access.getCurrentCluster()?.server,
    agent: agent?.constructor.name,
    agentTls: agent && {
      ca: agent.options.ca,
      cert: agent.options.cert,
      key: agent.options.key,
      servername: agent.options.servername,
      rejectUnauthorized: agent.options.rejectUnauthorized,
    },
  };
}

/** The same file read by client-node. */
function clientNode(file: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

function kubeconfig(cluster: object, user: object, extra: object = {}): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'ctx',
    ...extra,
  });
}

describe('loadClusterAccess', () => {
  let dir: string;
  let n = 0;
  const file = async (text: string): Promise<string> => {
    const path = join(dir, `kubeconfig-${String(++n)}`);
    await writeFile(path, text);
    return path;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-cluster-access-'));
    await writeFile(join(dir, 'ca.crt'), 'CA PEM');
    await writeFile(join(dir, 'client.crt'), 'CERT PEM');
    await writeFile(join(dir, 'client.key'), 'KEY PEM');
    await writeFile(join(dir, 'token'), 'file-token');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const served = [
    {
      name: 'client certificate and CA as data (what envtest writes)',
      text: kubeconfig(
        { server: 'https://127.0.0.1:6443/', 'certificate-authority-data': b64('CA PEM') },
        { 'client-certificate-data': b64('CERT PEM'), 'client-key-data': b64('KEY PEM') },
      ),
    },
    {
      name: 'client certificate and CA as files relative to the kubeconfig',
      text: kubeconfig(
        { server: 'https://api.example:443', 'certificate-authority': 'ca.crt' },
        { 'client-certificate': 'client.crt', 'client-key': 'client.key' },
      ),
    },
    {
      name: 'a token, impersonation, an unverified server with a TLS server name',
      text: kubeconfig(
        { server: 'https://10.0.0.1', 'insecure-skip-tls-verify': true, 'tls-server-name': 'api.internal' },
        { token: 'static-token', as: 'someone' },
      ),
    },
    {
      name: 'plain HTTP with verification off',
      text: kubeconfig({ server: 'http://127.0.0.1:8080', 'insecure-skip-tls-verify': true }, { token: 't' }),
    },
  ];
  for (const c of served) {
    test(`serves ${c.name} as client-node does, without client-node`, async () => {
      const path = await file(c.text);
      const access = await loadClusterAccess(path);
      assert.ok(access instanceof KubeconfigLite);
      assert.deepEqual(await applied(access), await applied(clientNode(path)));
    });
  }

  test('a token file (absolute path) is read at load, as client-node does', async () => {
    const path = await file(kubeconfig({ server: 'https://h' }, { 'token-file': join(dir, 'token') }));
    const access = await loadClusterAccess(path);
    assert.ok(access instanceof KubeconfigLite);
    assert.deepEqual(await applied(access), await applied(clientNode(path)));
  });

  test('plain HTTP with verification on is refused as client-node refuses it', async () => {
    const path = await file(kubeconfig({ server: 'http://127.0.0.1:8080' }, { token: 't' }));
    const access = await loadClusterAccess(path);
    assert.ok(access instanceof KubeconfigLite);
    await assert.rejects(access.applyToHTTPSOptions({}), /HTTP protocol is not allowed/);
    await assert.rejects(clientNode(path).applyToHTTPSOptions({}), /HTTP protocol is not allowed/);
  });

  const handedOn = [
    { name: 'an exec plugin', text: kubeconfig({ server: 'https://h' }, { exec: { command: 'x' } }) },
    {
      name: 'an auth provider',
      text: kubeconfig({ server: 'https://h' }, { 'auth-provider': { name: 'oidc' } }),
    },
    { name: 'basic auth', text: kubeconfig({ server: 'https://h' }, { username: 'a', password: 'b' }) },
    { name: 'a proxy', text: kubeconfig({ server: 'https://h', 'proxy-url': 'http://proxy:3128' }, {}) },
    {
      name: 'a context without a user',
      text: stringify({
        clusters: [{ name: 'c', cluster: { server: 'https://h' } }],
        contexts: [{ name: 'x', context: { cluster: 'c' } }],
        'current-context': 'x',
      }),
    },
  ];
  for (const c of handedOn) {
    test(`hands ${c.name} to client-node`, async () => {
      const access = await loadClusterAccess(await file(c.text));
      assert.ok(access instanceof KubeConfig);
    });
  }

  test('a broken kubeconfig fails with client-node’s error', async () => {
    const path = await file(kubeconfig({ 'certificate-authority-data': 'x' }, {}));
    const expected = (() => {
      try {
        clientNode(path);
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    })();
    assert.match(expected, /server is missing/);
    await assert.rejects(loadClusterAccess(path), { message: expected });
  });

  test('$KUBECONFIG with one file is served; with several, client-node merges them', async () => {
    const one = await file(kubeconfig({ server: 'https://one' }, { token: 'a' }));
    const saved = process.env.KUBECONFIG;
    try {
      process.env.KUBECONFIG = one;
      const single = await loadClusterAccess();
      assert.ok(single instanceof KubeconfigLite);
      assert.equal(single.getCurrentCluster().server, 'https://one');
      process.env.KUBECONFIG = [one, await file(stringify({ users: [{ name: 'v', user: {} }] }))].join(':');
      assert.ok((await loadClusterAccess()) instanceof KubeConfig);
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });

  test('in cluster: the service account, its token re-read when a minute old', async () => {
    const root = join(dir, 'in-cluster');
    const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    await mkdir(sa, { recursive: true });
    await writeFile(join(sa, 'ca.crt'), 'SA CA');
    await writeFile(join(sa, 'token'), 'token-1');
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    try {
      process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
      process.env.KUBERNETES_SERVICE_PORT = '443';
      const lite = inClusterAccess(root);
      const kc = new KubeConfig();
      kc.loadFromCluster(root);
      assert.deepEqual(await applied(lite), await applied(kc));
      assert.equal(lite.getCurrentCluster().server, 'https://[fd00::1]:443');

      await writeFile(join(sa, 'token'), 'token-2');
      mock.timers.tick(59_000);
      const opts: https.RequestOptions = {};
      await lite.applyToHTTPSOptions(opts);
      assert.equal((opts.headers as http.OutgoingHttpHeaders).Authorization, 'Bearer token-1');
      mock.timers.tick(2_000);
      assert.deepEqual(await applied(lite), await applied(kc));
      const again: https.RequestOptions = {};
      await lite.applyToHTTPSOptions(again);
      assert.equal((again.headers as http.OutgoingHttpHeaders).Authorization, 'Bearer token-2');
    } finally {
      mock.timers.reset();
      for (const [key, value] of [
        ['KUBERNETES_SERVICE_HOST', saved.host],
        ['KUBERNETES_SERVICE_PORT', saved.port],
      ] as const) {
        if (value === undefined) Reflect.deleteProperty(process.env, key);
        else process.env[key] = value;
      }
    }
  });
});
