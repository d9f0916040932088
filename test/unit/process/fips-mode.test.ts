import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, getFips } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  IMAGE_FIPS_OPENSSL_CONF,
  fipsModeProblem,
  requireFipsMode,
  type FipsProbe,
} from '../../../src/process/fips-mode.js';

/** A node:crypto stand-in: FIPS mode as reported, and which digests are served. */
function probe(fips: 0 | 1, served: readonly string[]): FipsProbe {
  return {
    getFips: () => fips,
    createHash: (algorithm: string) => {
      if (!served.includes(algorithm)) throw new Error(`${algorithm}: unsupported`);
      return createHash('sha256');
    },
  };
}

describe('--fips', () => {
  test('in force only with getFips() 1, SHA-256 served and MD5 refused', () => {
    assert.equal(fipsModeProblem(probe(1, ['sha256'])), undefined);
    assert.doesNotThrow(() => {
      requireFipsMode(probe(1, ['sha256']));
    });
    assert.match(fipsModeProblem(probe(0, ['sha256'])) ?? '', /getFips\(\) is 0/);
    // fips=yes asked for, but no FIPS provider loaded: nothing is served.
    assert.match(fipsModeProblem(probe(1, [])) ?? '', /SHA-256 is not served .*not loaded/);
    assert.match(fipsModeProblem(probe(1, ['sha256', 'md5'])) ?? '', /MD5 is still available/);
    assert.throws(
      () => {
        requireFipsMode(probe(1, ['sha256', 'md5']));
      },
      { message: /^--fips: FIPS mode is not in force: MD5/ },
    );
  });

  test('the image build writes the OpenSSL configuration the message names, and sets OPENSSL_CONF to it', () => {
    const script = readFileSync('scripts/build-image.sh', 'utf8');
    assert.match(script, new RegExp(`^FIPS_OPENSSL_CONF=${IMAGE_FIPS_OPENSSL_CONF}$`, 'm'));
    assert.match(script, /--config\.env "OPENSSL_CONF=\$FIPS_OPENSSL_CONF"/);
  });

  const rtb = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      encoding: 'utf8',
      // No kubeconfig is reachable: a start that got past the check would fail on that instead.
      env: { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig', OPENSSL_CONF: '' },
      timeout: 60_000,
    });

  for (const args of [
    ['webhook', '--fips'],
    ['controller', '--fips', '--pull-secret', 'pull'],
  ]) {
    test(`rtb ${args.join(' ')} exits 1 with the reason where the FIPS provider is missing`, (t) => {
      if (getFips() === 1) {
        t.skip('this node runs in FIPS mode');
        return;
      }
      const run = rtb(...args);
      assert.equal(run.status, 1, run.stderr);
      assert.equal(
        run.stderr.trim(),
        'rtb: --fips: FIPS mode is not in force: crypto.getFips() is 0: no OpenSSL configuration ' +
          'activates the FIPS provider (the rtb image sets OPENSSL_CONF=/usr/lib/ssl/rtb-fips.cnf; docs/fips.md)',
      );
    });
  }
});
