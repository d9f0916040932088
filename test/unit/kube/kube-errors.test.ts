import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  KubeApiError,
  isResourceNotServed,
  noResponseError,
  statusCodeOf,
} from '../../../src/kube/kube-errors.js';

describe('KubeApiError.wrap', () => {
  test("keeps the call's status, so status checks see it without looking at the cause", () => {
    const call = KubeApiError.fromStatus({ kind: 'Status', code: 404, reason: 'NotFound', details: {} });
    const wrapped = KubeApiError.wrap('cannot apply ClusterTrustBundle b', call);
    assert.equal(wrapped.message, 'cannot apply ClusterTrustBundle b');
    assert.equal(wrapped.cause, call);
    assert.equal(statusCodeOf(wrapped), 404);
    assert.equal(wrapped.reason, 'NotFound');
    // A 404 naming no object: the resource is not served, and discovery runs again.
    assert.equal(isResourceNotServed(wrapped), true);
  });

  test('a call that got no answer stays one, and the call says why', () => {
    const call = new KubeApiError('PATCH /api/v1/x failed: connect ECONNREFUSED', {
      cause: new Error('connect ECONNREFUSED'),
    });
    assert.equal(noResponseError(KubeApiError.wrap('cannot apply Secret a/b', call)), call);
    const answered = KubeApiError.fromStatus({ kind: 'Status', code: 403 });
    assert.equal(noResponseError(KubeApiError.wrap('cannot apply Secret a/b', answered)), undefined);
  });
});
