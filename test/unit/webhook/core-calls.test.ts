import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { ClusterAccess } from '../../../src/kube/cluster-access.js';
import { coreCalls } from '../../../src/webhook/core-calls.js';

describe("the webhook's core calls", () => {
  let server: http.Server;
  let access: ClusterAccess;
  const agent = new http.Agent({ keepAlive: true });
  before(async () => {
    // An API server that takes every request and never answers.
    server = http.createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    access = {
      getCurrentCluster: () => ({ server: url }),
      applyToHTTPSOptions: (opts) => {
        opts.agent = agent;
        return Promise.resolve();
      },
    };
  });
  after(async () => {
    agent.destroy();
    server.closeAllConnections();
    await new Promise<void>((r) =>
      server.close(() => {
        r();
      }),
    );
  });

  // The test's timeout is the check: well above the admission bound, well below a call's usual 30 s.
  test(
    'a call on the admission path without an answer fails well inside the API server timeout',
    { timeout: 10_000 },
    async () => {
      const calls = coreCalls(access);
      await Promise.all([
        assert.rejects(calls.readNamespace({ name: 'team' }), /timed out|timeout/i),
        assert.rejects(
          calls.createNamespacedSecret({
            namespace: 'team',
            body: { metadata: { name: 'registry-credentials' } },
            fieldManager: 'rt-bootstrapper',
          }),
          /timed out|timeout/i,
        ),
      ]);
    },
  );
});
