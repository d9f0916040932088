import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { errorLine } from '../../../src/telemetry/error-line.js';

describe('errorLine', () => {
  test('each run of white space holding a line break becomes one space; other runs stay', () => {
    assert.equal(errorLine(new Error('cannot start:\n   port in use \n\n ')), 'cannot start: port in use');
    assert.equal(errorLine(new Error('a  \t b\r\nc')), 'a  \t b c');
    assert.equal(errorLine('plain'), 'plain');
  });
});
