import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_RUNTIME_DEADLINE_MS } from '../../../../src/controller/direct/direct-mode-options.js';
import {
  RUNTIME_ANSWER_MAX_BYTES,
  RuntimeClientPool,
} from '../../../../src/controller/direct/runtime-clients.js';
import { RuntimeInstaller } from '../../../../src/controller/direct/runtime-installer.js';
import { RuntimeUnreachableError } from '../../../../src/controller/direct/runtime-unreachable.js';
import { KeepAliveAccess } from '../../../../src/kube/keep-alive-access.js';
import { kubeRequest } from '../../../../src/kube/kube-request.js';
import { RequestAbortedError, type RequestLimits } from '../../../../src/kube/request-limits.js';
import { renderKubeconfig } from '../../../../src/envtest/kubeconfig.js';
import { startLoopbackServer, type LoopbackServer } from '../../../support/loopback-server.js';

type Route = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => void;
let route: Route = (_req, res) => res.end();
let loopback: LoopbackServer;
const requests: string[] = [];
const timers = new Set<NodeJS.Timeout>();

const installer = (limits: RequestLimits): RuntimeInstaller =>
  new RuntimeInstaller(new KeepAliveAccess(loopback.access, {}, limits), 5_000);

/** A runtime's kubeconfig as its Secret holds it (base64); no request goes to its server. */
const KUBECONFIG_DATA = Buffer.from(
  renderKubeconfig({
    name: 'x',
    server: 'https://a:6443',
    caPem: 'CA',
    clientCertPem: 'C',
    clientKeyPem: 'K',
  }),
).toString('base64');

const json = (res: http.ServerResponse, code: number, body: unknown): void => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** The refusal `call` failed with, once asserted to be for `reason` with a message matching `message`. */
async function unreachable(
  call: Promise<unknown>,
  reason: string,
  message: RegExp,
): Promise<RuntimeUnreachableError> {
  const err = await call.catch((e: unknown) => e);
  assert.ok(err instanceof RuntimeUnreachableError, String(err));
  assert.equal(err.reason, reason);
  assert.match(err.message, message);
  return err;
}

describe('calls to a runtime are bounded', () => {
  before(async () => {
    loopback = await startLoopbackServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      requests.push(`${req.method ?? ''} ${url.pathname}${url.search}`);
      route(req, res, url);
    });
  });
  after(async () => {
    for (const t of timers) clearInterval(t);
    await loopback.close();
  });

  test("the pool's clients carry the cap, the deadline and the stop", async () => {
    const pool = new RuntimeClientPool({ limits: { deadlineMs: 1_234 } });
    const limits = pool.get('rt-1', KUBECONFIG_DATA).requestLimits;
    assert.equal(limits?.maxAnswerBytes, RUNTIME_ANSWER_MAX_BYTES);
    assert.equal(limits.deadlineMs, 1_234);
    assert.equal(new RuntimeClientPool().limits.deadlineMs, DEFAULT_RUNTIME_DEADLINE_MS);
    pool.abortCalls();
    assert.equal(limits.signal?.aborted, true);
    const before = requests.length;
    await assert.rejects(
      kubeRequest(pool.get('rt-1', KUBECONFIG_DATA), { method: 'GET', path: '/x' }),
      RequestAbortedError,
    );
    assert.equal(requests.length, before, 'no request after the stop');
    pool.stop();
  });

  test("a paced pool's clients pace their answers; its urgent clients, the same runtime's, do not", () => {
    const pace = (): Promise<void> => Promise.resolve();
    const pool = new RuntimeClientPool({ limits: { deadlineMs: 1_234 }, pace });
    const paced = pool.get('rt-1', KUBECONFIG_DATA);
    const urgent = pool.get('rt-1', KUBECONFIG_DATA, true);
    assert.equal(paced.requestLimits?.pace, pace);
    assert.equal(urgent.requestLimits?.pace, undefined);
    assert.equal(urgent.requestLimits?.deadlineMs, 1_234, 'bounded all the same');
    assert.equal(urgent.getCurrentCluster()?.server, paced.getCurrentCluster()?.server);
    assert.equal(
      pool.get('rt-1', KUBECONFIG_DATA, true),
      urgent,
      'one client: the same view while the kubeconfig holds',
    );
    assert.equal(pool.size, 1);
    pool.stop();
  });

  test('a dripping runtime: the first call fails at the deadline, the later ones at once, without a request', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const t = setInterval(() => res.write(' '), 50);
      timers.add(t);
      res.on('close', () => {
        clearInterval(t);
      });
    };
    const rt = installer({ maxAnswerBytes: 1 << 20, deadlineMs: 400 });
    const err = await unreachable(
      rt.readServing('kyma-system'),
      'DeadlineExceeded',
      /^the runtime's API server is too slow: GET \/api\/v1\/namespaces\/kyma-system\/secrets\/[^ ]+: no complete answer within 400 ms/,
    );
    assert.equal(rt.refusal, err);
    assert.equal(rt.answered, false);
    const before = requests.length;
    await assert.rejects(rt.deploymentReadiness('kyma-system'), (e: unknown) => e === err);
    await assert.rejects(
      rt.apply([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'b' } }]),
      (e: unknown) => e === err,
    );
    assert.equal(requests.length, before);
  });

  test('a flooding runtime: AnswerTooLarge, the cap and the path named', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"kind":"Secret","x":"${'a'.repeat(2 << 20)}"}`);
    };
    const rt = installer({ maxAnswerBytes: 1 << 20, deadlineMs: 5_000 });
    await unreachable(
      rt.deploymentReadiness('kyma-system'),
      'AnswerTooLarge',
      /answered too much: GET \/apis\/apps\/v1\/namespaces\/kyma-system\/deployments\/[^ ]+: the answer exceeds the cap of 1048576 bytes/,
    );
  });

  test('uninstall lists what carries our label a page at a time', async () => {
    const deleted: string[] = [];
    route = (req, res, url) => {
      if (req.method === 'DELETE') {
        deleted.push(url.pathname);
        json(res, 200, { kind: 'Status', status: 'Success' });
      } else if (url.pathname === '/api/v1/secrets') {
        const second = url.searchParams.get('continue') === 'page-2';
        const items = (second ? ['c'] : ['a', 'b']).map((n) => ({ metadata: { name: n, namespace: 'ns' } }));
        json(res, 200, { kind: 'SecretList', metadata: { continue: second ? '' : 'page-2' }, items });
      } else if (url.pathname === '/api/v1/configmaps') {
        json(res, 200, { kind: 'ConfigMapList', metadata: {}, items: [] });
      } else if (url.pathname.startsWith('/apis/rbac.authorization.k8s.io/v1/role')) {
        // The restarter's rights per namespace: found by name, also in a namespace no longer listed.
        const items =
          url.searchParams.get('fieldSelector') === 'metadata.name=rt-bootstrapper-trust-restarter'
            ? [{ metadata: { name: 'rt-bootstrapper-trust-restarter', namespace: 'dropped' } }]
            : [];
        json(res, 200, { kind: 'List', metadata: {}, items });
      } else json(res, 404, { kind: 'Status', code: 404, details: {} });
    };
    const rt = installer({ maxAnswerBytes: 1 << 20, deadlineMs: 5_000 });
    const before = requests.length;
    await rt.uninstall({
      registration: [],
      webhook: [],
      manifests: { namespace: { metadata: { name: 'kyma-system' } } },
    } as unknown as Parameters<RuntimeInstaller['uninstall']>[0]);
    const lists = requests.slice(before).filter((r) => r.startsWith('GET /api/v1/secrets'));
    assert.equal(lists.length, 2);
    for (const l of lists) assert.match(l, /limit=100/);
    assert.match(lists[1] ?? '', /continue=page-2/);
    assert.deepEqual(
      deleted.filter((p) => p.startsWith('/api/v1/namespaces/ns/secrets/')),
      [
        '/api/v1/namespaces/ns/secrets/a',
        '/api/v1/namespaces/ns/secrets/b',
        '/api/v1/namespaces/ns/secrets/c',
      ],
    );
    assert.deepEqual(
      deleted.filter((p) => p.startsWith('/apis/rbac.authorization.k8s.io/')),
      [
        '/apis/rbac.authorization.k8s.io/v1/namespaces/dropped/rolebindings/rt-bootstrapper-trust-restarter',
        '/apis/rbac.authorization.k8s.io/v1/namespaces/dropped/roles/rt-bootstrapper-trust-restarter',
      ],
    );
  });
});
