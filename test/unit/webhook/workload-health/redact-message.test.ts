import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_MESSAGE_LENGTH, redactMessage } from '../../../../src/webhook/workload-health/redact-message.js';

describe('redactMessage', () => {
  const cases: readonly (readonly [string, string])[] = [
    ['Get "https://bob:s3cr3t@mirror.example.com/v2/": EOF', 'Get "https://***@mirror.example.com/v2/": EOF'],
    ['fetch oci://token@r.io/x failed', 'fetch oci://***@r.io/x failed'],
    ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: *** ***'],
    ['header Bearer eyJhbGciOi.abc.def-_ failed', 'header Bearer *** failed'],
    ['auth=dXNlcjpwYXNz rest', 'auth=*** rest'],
    ['password: hunter2, user bob', 'password: ***, user bob'],
    ['{"auths":{"r.io":{"auth":"dXNlcjpwYXNz"}}}', '{"auths":{"r.io":{"auth":"***"}}}'],
    ['PASSWORD=x&TOKEN=y', 'PASSWORD=***&TOKEN=***'],
    ['client_secret=abc api-key=def apikey: ghi', 'client_secret=*** api-key=*** apikey: ***'],
  ];
  for (const [input, output] of cases)
    test(`masks ${input}`, () => {
      assert.equal(redactMessage(input), output);
    });

  test('leaves image references, digests and registries with ports alone', () => {
    const m =
      'Failed to pull image "docker.io/library/nginx:1.0@sha256:abcd": localhost:5000/x:1 [::1]:5000/y: 401 Unauthorized';
    assert.equal(redactMessage(m), m);
  });

  test('cuts after masking, to the report limit', () => {
    const cut = redactMessage(`${'x'.repeat(MAX_MESSAGE_LENGTH - 5)} password=${'s'.repeat(100)}`);
    assert.ok(cut.length <= MAX_MESSAGE_LENGTH);
    assert.ok(!cut.includes('sss'));
    assert.equal(redactMessage('short', 3), 'sh…');
    assert.equal(redactMessage('abc', 3), 'abc');
  });
});
