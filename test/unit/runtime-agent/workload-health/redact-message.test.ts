import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MAX_MESSAGE_LENGTH,
  SCAN_FACTOR,
  redactMessage,
} from '../../../../src/runtime-agent/workload-health/redact-message.js';

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

  test('reads a bounded head of a long message, cut back to a word: no half secret stays', () => {
    const bound = MAX_MESSAGE_LENGTH * SCAN_FACTOR;
    // The masked token shrinks the head, so what the bound cuts would land inside the kept part.
    const head = `password=${'p'.repeat(bound - 40)} `;
    const url = 'https://bob:hunter2hunter2hunter2@mirror.example.com/v2/';
    const message = `${head}${url}`;
    assert.ok(head.length < bound && message.length > bound, 'the bound cuts inside the user info');
    const cut = redactMessage(message);
    assert.ok(!cut.includes('hunter'), cut);
    assert.ok(!cut.includes('bob'), cut);
    assert.equal(cut, 'password=*** …');
  });

  test("a tenant's 20 KB message is cut before the rules read it", () => {
    const hostile = 'auth-'.repeat(4000);
    assert.equal(redactMessage(hostile), '…', 'one word longer than the bound: none of it kept');
    const quoted = redactMessage(`Failed to pull image "docker.io/${hostile}:1": not found`);
    assert.ok(quoted.length <= MAX_MESSAGE_LENGTH);
    assert.ok(quoted.startsWith('Failed to pull image "') && quoted.endsWith('…'), quoted);
  });

  test('a scheme needs a letter and user info an @; a masked value stays as it is', () => {
    for (const m of ['1://a@b', 'x:// @b', 'https://a/b@c', 'token: ***', 'auth=', 'pwd:"'])
      assert.equal(redactMessage(m), m);
    assert.equal(redactMessage('a https://u@h and http://v:w@h'), 'a https://***@h and http://***@h');
    assert.equal(redactMessage('my-token = "abc" x_secret:def'), 'my-token = "***" x_secret:***');
  });

  test('a key inside a value masked already is still read', () => {
    assert.equal(redactMessage('token=***token=abc'), 'token=***token=***');
    assert.equal(redactMessage('auth=***,password=hunter2'), 'auth=***,password=***');
    assert.equal(redactMessage('token=***'.repeat(3)), 'token=***'.repeat(3));
  });
});
