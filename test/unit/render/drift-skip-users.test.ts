import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  notWrittenBy,
  renderDriftWebhookConfiguration,
  SKIP_USERNAME_MAX_CHARS,
} from '../../../src/render/webhook-registration.js';

test('the drift registration skips writes by user, never by field manager', () => {
  const expression = (o: { driftSkipUsername?: string }) =>
    renderDriftWebhookConfiguration({ image: 'x', ...o }, 'kyma-system').webhooks?.[0]?.matchConditions?.[0]
      ?.expression ?? '';
  const sa =
    'request.userInfo.username != "system:serviceaccount:kyma-system:rt-bootstrapper-controller-manager"';
  assert.equal(expression({}), sa);
  assert.equal(expression({ driftSkipUsername: 'kcp' }), `${sa} && request.userInfo.username != "kcp"`);
  assert.doesNotMatch(expression({ driftSkipUsername: 'kcp' }), /fieldManager/);
});

test('a user name reaches the expression only as a CEL string literal of printable ASCII', () => {
  assert.equal(notWrittenBy(['a"b\\c']), 'request.userInfo.username != "a\\"b\\\\c"');
  // What the runtime's API server answered is not trusted to be a name: anything else skips nobody.
  assert.equal(notWrittenBy(['x\n|| true']), undefined);
  assert.equal(notWrittenBy(['ünïcode']), undefined);
  assert.equal(notWrittenBy(['']), undefined);
  assert.equal(notWrittenBy(['a'.repeat(SKIP_USERNAME_MAX_CHARS + 1)]), undefined);
  assert.equal(notWrittenBy(['ok', 'x\u0000']), 'request.userInfo.username != "ok"');
});
