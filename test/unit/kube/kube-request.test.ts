import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ClusterAccess } from '../../../src/kube/cluster-access.js';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { kubeRequest } from '../../../src/kube/kube-request.js';
import { startLoopbackServer, type LoopbackServer } from '../../support/loopback-server.js';

let api: LoopbackServer;
let connections = 0;
let access: ClusterAccess;

describe('kubeRequest', () => {
  before(async () => {
    api = await startLoopbackServer((req, res) => {
      if (req.url?.startsWith('/hang')) return; // never answers
      if (req.url?.startsWith('/missing')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'x not found' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Secret', metadata: { name: 'x' } }));
    });
    api.server.on('connection', () => connections++);
    access = api.access;
  });
  after(() => api.close());

  test('an answer is parsed; with parseResponse false it is read to its end and dropped', async () => {
    const before = connections;
    const got = await kubeRequest<{ kind: string }>(access, { method: 'GET', path: '/ok' });
    assert.equal(got.kind, 'Secret');
    const dropped = await kubeRequest(access, {
      method: 'PATCH',
      path: '/ok',
      body: {},
      parseResponse: false,
    });
    assert.equal(dropped, undefined);
    await kubeRequest(access, { method: 'GET', path: '/ok' });
    assert.equal(connections - before, 1, 'the connection is reused after a dropped body');
  });

  test('an error answer is a KubeApiError from its Status, parsed or not', async () => {
    for (const parseResponse of [true, false]) {
      await assert.rejects(
        kubeRequest(access, { method: 'GET', path: '/missing', parseResponse }),
        (e: unknown) => e instanceof KubeApiError && e.statusCode === 404 && e.message === 'x not found',
      );
    }
  });

  test('no answer within the timeout: a KubeApiError with reason Timeout and no status code', async () => {
    await assert.rejects(
      kubeRequest(access, { method: 'GET', path: '/hang', timeoutMs: 100 }),
      (e: unknown) =>
        e instanceof KubeApiError &&
        e.reason === 'Timeout' &&
        e.statusCode === undefined &&
        /timed out/.test(e.message),
    );
  });
});
