import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { trimChar, trimEndChar } from '../../../src/text/trim-char.js';

describe('trimEndChar and trimChar', () => {
  test('remove the runs of one character at the end, or at both ends', () => {
    assert.equal(trimEndChar('https://h:6443//', '/'), 'https://h:6443');
    assert.equal(trimEndChar('a/b', '/'), 'a/b');
    assert.equal(trimEndChar('///', '/'), '');
    assert.equal(trimEndChar('', '/'), '');
    assert.equal(trimChar('--a-b--', '-'), 'a-b');
    assert.equal(trimChar('----', '-'), '');
    assert.equal(trimChar('a', '-'), 'a');
  });
});
