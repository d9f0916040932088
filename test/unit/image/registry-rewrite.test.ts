import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ImageReferenceError, UnsupportedDigestError } from '../../../src/image/image-reference.js';
import {
  createRegistryRewriter,
  overrideFindings,
  overrideSourceProblem,
  parseRegistryTarget,
  rewriteImage,
  usableOverrides,
} from '../../../src/image/registry-rewrite.js';
import { rewriteCases, rewriteOverrides } from '../../support/mutation-cases.js';

const SHA256 = `sha256:${'b'.repeat(64)}`;

describe('rewriteImage', () => {
  for (const [name, image, expected] of rewriteCases) {
    test(`${name}: ${image}`, () => {
      assert.equal(rewriteImage(image, rewriteOverrides), expected);
      // Idempotence: a second pass over the result changes nothing.
      if (expected !== undefined) assert.equal(rewriteImage(expected, rewriteOverrides), undefined);
    });
  }

  test('without a docker.io key, short names stay exactly as written (never canonicalised)', () => {
    const o = { 'replace.me': 'ghcr.io' };
    for (const image of ['nginx', 'nginx:1.25', 'library/nginx', `nginx@${SHA256}`, 'docker.io/nginx']) {
      assert.equal(rewriteImage(image, o), undefined, image);
    }
  });

  test('no overrides: nothing is rewritten', () => {
    assert.equal(rewriteImage('replace.me/a:1', {}), undefined);
  });

  test('an override to the same place is a no-op', () => {
    assert.equal(rewriteImage('ghcr.io/a:1', { 'ghcr.io': 'ghcr.io' }), undefined);
  });

  test('chained overrides: an image already at a target is never moved on (second pass stays a no-op)', () => {
    const chain = { 'a.io': 'b.io', 'b.io': 'c.io' };
    assert.equal(rewriteImage('a.io/x', chain), 'b.io/x');
    assert.equal(rewriteImage('b.io/x', chain), undefined);
  });

  test('override keys that collide with Object.prototype names are plain keys', () => {
    assert.equal(rewriteImage('constructor.io/x', { 'constructor.io': 'ghcr.io' }), 'ghcr.io/x');
    assert.equal(rewriteImage('localhost/x', { 'replace.me': 'ghcr.io' }), undefined);
  });

  test('an unparseable image throws ImageReferenceError (with and without rewriteOverrides)', () => {
    assert.throws(() => rewriteImage('replace.me/UPPER:1', rewriteOverrides), ImageReferenceError);
    assert.throws(() => rewriteImage('', {}), ImageReferenceError);
  });

  test('a rewrite that would exceed the name length throws with the parse error as cause', () => {
    const longTarget = `mirror.example.com/${'p'.repeat(200)}`;
    const image = `replace.me/${'a'.repeat(60)}:1`;
    assert.throws(
      () => rewriteImage(image, { 'replace.me': longTarget }),
      (error: unknown) => {
        assert.ok(error instanceof ImageReferenceError);
        assert.equal(error.input, image);
        assert.ok(error.cause instanceof ImageReferenceError);
        return true;
      },
    );
  });
});

describe('createRegistryRewriter', () => {
  test('reuses parsed targets across images', () => {
    const rewrite = createRegistryRewriter(rewriteOverrides);
    assert.equal(rewrite('replace.me/a'), 'ghcr.io/a');
    assert.equal(rewrite('nginx'), 'mirror.example.com/dockerhub/library/nginx');
    assert.equal(rewrite('ghcr.io/a'), undefined);
  });

  const inert: readonly [Record<string, string>, string][] = [
    [{ 'no-dot': 'ghcr.io' }, 'no-dot/app:1'],
    [{ 'reg.io/path': 'ghcr.io' }, 'reg.io/path/app:1'],
    [{ 'replace.me': 'nodot' }, 'replace.me/app:1'],
    [{ 'replace.me': 'ghcr.io/Upper' }, 'replace.me/app:1'],
    [{ 'replace.me': 'ghcr.io/' }, 'replace.me/app:1'],
    [{ 'replace.me': '' }, 'replace.me/app:1'],
  ];
  for (const [o, image] of inert) {
    test(`an override that cannot take effect is never used: ${JSON.stringify(o)}`, () => {
      const rewrite = createRegistryRewriter({ ...o, 'quay.io': 'ghcr.io' });
      assert.equal(rewrite(image), undefined);
      assert.equal(rewrite('quay.io/app:1'), 'ghcr.io/app:1', 'the usable ones still work');
      assert.equal(overrideFindings(o).length, 1);
    });
  }

  test('index.docker.io as a key is Docker Hub; beside docker.io, docker.io wins', () => {
    assert.equal(rewriteImage('nginx', { 'index.docker.io': 'mirror.io' }), 'mirror.io/library/nginx');
    assert.equal(rewriteImage('docker.io/x/y', { 'index.docker.io': 'mirror.io' }), 'mirror.io/x/y');
    for (const order of [
      { 'index.docker.io': 'legacy.io', 'docker.io': 'hub.io' },
      { 'docker.io': 'hub.io', 'index.docker.io': 'legacy.io' },
    ]) {
      assert.equal(rewriteImage('nginx', order), 'hub.io/library/nginx');
      assert.deepEqual([...usableOverrides(order).keys()], ['docker.io']);
    }
  });

  test('an image is at a target when it is under its path prefix, not merely beside it', () => {
    const chain = { 'a.io': 'b.io/p', 'b.io': 'c.io' };
    assert.equal(rewriteImage('a.io/x', chain), 'b.io/p/x');
    assert.equal(rewriteImage('b.io/p/x', chain), undefined, 'under the prefix');
    assert.equal(rewriteImage('b.io/p', chain), undefined, 'the prefix itself');
    assert.equal(rewriteImage('b.io/q/x', chain), 'c.io/q/x', 'another path on the target host');
    assert.equal(rewriteImage('b.io/px/y', chain), 'c.io/px/y', 'a path that only starts like the prefix');
  });

  test('the target of an override that cannot take effect does not shield images either', () => {
    assert.equal(rewriteImage('q.io/x', { 'no-dot': 'q.io', 'q.io': 'r.io' }), 'r.io/x');
    assert.equal(rewriteImage('q.io/x', { '-q.io': 'q.io', 'q.io': 'r.io' }), 'r.io/x');
  });

  test('an image already under an index.docker.io target is at that target', () => {
    assert.equal(rewriteImage('docker.io/mirror/x', { 'quay.io': 'index.docker.io/mirror' }), undefined);
  });

  test('a digest algorithm runtimes do not know: UnsupportedDigestError, not a rewrite', () => {
    assert.throws(
      () => rewriteImage(`replace.me/a@md5:${'a'.repeat(32)}`, rewriteOverrides),
      UnsupportedDigestError,
    );
  });

  test('the path limit counts the target prefix and the repository, not the host', () => {
    const host = `${'h'.repeat(120)}.example.com`;
    const repository = 'a'.repeat(253);
    assert.equal(rewriteImage(`replace.me/${repository}`, { 'replace.me': host }), `${host}/${repository}`);
    assert.equal(
      rewriteImage(`replace.me/${repository}`, { 'replace.me': `${host}/p` }),
      `${host}/p/${repository}`,
      'exactly 255: still fine',
    );
    assert.throws(
      () => rewriteImage(`replace.me/${repository}`, { 'replace.me': `${host}/pq` }),
      (error: unknown) => {
        assert.ok(error instanceof ImageReferenceError);
        assert.match(error.message, /rewriting to ".*\/pq\/a+" gives an invalid reference/);
        return true;
      },
      '256',
    );
    assert.throws(
      () => rewriteImage(`replace.me/${repository}`, { 'replace.me': `${host}/p/q` }),
      ImageReferenceError,
    );
  });
});

describe('overrideFindings', () => {
  test('names every override that will not take effect, and why', () => {
    assert.deepEqual(
      overrideFindings({
        'replace.me': 'ghcr.io',
        rn2: 'orn2',
        'test.com': 'test-registry',
        'index.docker.io': 'a.io',
        'docker.io': 'b.io',
      }),
      [
        {
          key: 'rn2',
          message:
            'key: never matches: a registry host contains "." or ":" or is "localhost"; this override is never used',
        },
        {
          key: 'test.com',
          message:
            'target host "test-registry": never matches: a registry host contains "." or ":" or is "localhost"; this override is never used',
        },
        { key: 'index.docker.io', message: 'names Docker Hub as "docker.io" does, whose target is used' },
      ],
    );
    assert.deepEqual(overrideFindings({}), []);
    assert.deepEqual(overrideFindings({ 'docker.io': 'b.io' }), [], 'docker.io alone is fine');
    assert.deepEqual(overrideFindings({ 'index.docker.io': 'b.io' }), [], 'so is its legacy name alone');
    assert.deepEqual(overrideFindings({ 'reg.io/path': 'b.io', 'a.io': 'ghcr.io/Upper' }), [
      {
        key: 'reg.io/path',
        message: 'key: not a registry host (host or host:port, no path); this override is never used',
      },
      {
        key: 'a.io',
        message: 'target path: repository must be lowercase, got "Upper"; this override is never used',
      },
    ]);
  });
});

describe('parseRegistryTarget / overrideSourceProblem', () => {
  test('splits host and path prefix', () => {
    assert.deepEqual(parseRegistryTarget('ghcr.io'), { host: 'ghcr.io', pathPrefix: '' });
    assert.deepEqual(parseRegistryTarget('localhost:5001'), { host: 'localhost:5001', pathPrefix: '' });
    assert.deepEqual(parseRegistryTarget('mirror.example.com/a/b'), {
      host: 'mirror.example.com',
      pathPrefix: 'a/b',
    });
  });

  test('refuses a target that cannot take effect', () => {
    for (const bad of ['nodot', 'ghcr.io/Upper', 'ghcr.io/', '']) {
      assert.throws(() => parseRegistryTarget(bad), ImageReferenceError, bad);
    }
  });

  test('accepts hosts runtimes read as registries, refuses others', () => {
    for (const ok of [
      'ghcr.io',
      'localhost',
      'localhost:5000',
      'myhost:5000',
      '[::1]:5000',
      '10.0.0.1',
      'MyReg',
    ]) {
      assert.equal(overrideSourceProblem(ok), undefined, ok);
    }
    for (const bad of ['ghcr', 'ghcr.io/x', '', 'a b.io', '-a.io']) {
      assert.notEqual(overrideSourceProblem(bad), undefined, bad);
    }
  });
});
