import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { coreCalls } from '../../../src/webhook/core-calls.js';
import { startLoopbackServer, type LoopbackServer } from '../../support/loopback-server.js';

describe("the webhook's core calls", () => {
  let api: LoopbackServer;
  before(async () => {
    // An API server that takes every request and never answers.
    api = await startLoopbackServer(() => undefined);
  });
  after(() => api.close());

  // The test's timeout is the check: well above the admission bound, well below a call's usual 30 s.
  test(
    'a call on the admission path without an answer fails well inside the API server timeout',
    { timeout: 10_000 },
    async () => {
      const calls = coreCalls(api.access);
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
