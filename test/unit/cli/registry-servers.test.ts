import assert from 'node:assert/strict';
import { test } from 'node:test';
import { registryServersOf } from '../../../src/cli/flag-values.js';

test('--registry-server values become the preflight’s map; a malformed one names the flag', () => {
  assert.deepEqual(registryServersOf([], '--registry-server'), {});
  assert.deepEqual(
    registryServersOf(
      ['127.0.0.1:5000=http://10.213.0.1:5000', 'mirror.example=https://10.0.0.9:8443'],
      '--x',
    ),
    { '127.0.0.1:5000': 'http://10.213.0.1:5000', 'mirror.example': 'https://10.0.0.9:8443' },
  );
  for (const bad of ['127.0.0.1:5000', '=http://x', 'r=not a url', 'r=ftp://x'])
    assert.throws(
      () => registryServersOf([bad], '--registry-server'),
      /--registry-server must be registry=http\(s\)/,
      bad,
    );
});

test('a URL may name the node’s IP, as the webhook Pod’s args get it expanded', () => {
  assert.deepEqual(
    registryServersOf(['127.0.0.1:5000=http://$(HOST_IP):5000'], '--webhook-registry-server'),
    {
      '127.0.0.1:5000': 'http://$(HOST_IP):5000',
    },
  );
});
