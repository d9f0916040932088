import assert from 'node:assert/strict';
import { test } from 'node:test';
import { packageVersion } from '../../src/version.js';

test('packageVersion reads the version from package.json', () => {
  assert.match(packageVersion(), /^\d+\.\d+\.\d+/);
});
