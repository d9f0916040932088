import assert from 'node:assert/strict';
import type https from 'node:https';
import { describe, test } from 'node:test';
import type { ClusterAccess } from '../../../src/kube/cluster-access.js';
import { impersonating } from '../../../src/kube/impersonation.js';

const SA = 'system:serviceaccount:kyma-system:rt-bootstrapper-webhook';

/** An access whose kubeconfig itself impersonates, with groups. */
const base: ClusterAccess = {
  getCurrentCluster: () => ({ server: 'https://runtime.example:6443' }),
  applyToHTTPSOptions: (opts) => {
    opts.headers = {
      Authorization: 'Bearer admin',
      'Impersonate-User': 'someone',
      'Impersonate-Group': 'system:masters',
      'impersonate-extra-scopes': 'all',
    };
    return Promise.resolve();
  },
  requestLimits: { maxAnswerBytes: 1024, deadlineMs: 5_000 },
};

describe('impersonating', () => {
  test("every request acts as the user alone, on the access's own connection and credentials", async () => {
    const access = impersonating(base, SA);
    const opts: https.RequestOptions = {};
    await access.applyToHTTPSOptions(opts);
    assert.deepEqual(opts.headers, { Authorization: 'Bearer admin', 'Impersonate-User': SA });
    assert.equal(access.getCurrentCluster()?.server, 'https://runtime.example:6443');
    assert.deepEqual(access.requestLimits, { maxAnswerBytes: 1024, deadlineMs: 5_000 });
  });

  test('headers of the request itself are kept', async () => {
    const opts: https.RequestOptions = {};
    await impersonating(
      {
        getCurrentCluster: () => null,
        applyToHTTPSOptions: (o) => {
          o.headers = { ...o.headers, Authorization: 'Bearer t' };
          return Promise.resolve();
        },
      },
      SA,
    ).applyToHTTPSOptions(opts);
    assert.deepEqual(opts.headers, { Authorization: 'Bearer t', 'Impersonate-User': SA });
  });
});
