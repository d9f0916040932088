import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { packageIdentity, packageVersion, releaseImage } from '../../src/version.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
  config: { imageRepository: string };
};

test('packageVersion reads the version from package.json', () => {
  assert.match(packageVersion(), /^\d+\.\d+\.\d+/);
  assert.equal(packageIdentity().name, pkg.name);
});

test('the default image is <config.imageRepository>/<name>:<version> of package.json', () => {
  assert.equal(releaseImage(), `${pkg.config.imageRepository}/${pkg.name}:${pkg.version}`);
  assert.equal(releaseImage('9.9.9'), `${pkg.config.imageRepository}/${pkg.name}:9.9.9`);
});

test('scripts/build-image.sh names its image as the default image reference', () => {
  const script = new URL('../../scripts/build-image.sh', import.meta.url).pathname;
  const run = spawnSync('bash', [script, '--print-reference'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), releaseImage());
});
