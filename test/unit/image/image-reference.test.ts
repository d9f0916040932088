import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  canonicalRegistry,
  formatImageReference,
  ImageReferenceError,
  looksLikeRegistryHost,
  parseImageReference,
  repositoryPathProblem,
  UnsupportedDigestError,
} from '../../../src/image/image-reference.js';
import { invalidReferences, validReferences } from '../../support/mutation-cases.js';

describe('parseImageReference: valid references', () => {
  for (const [input, expected, canonical] of validReferences) {
    test(input, () => {
      const ref = parseImageReference(input);
      assert.deepEqual(ref, { tag: undefined, digest: undefined, ...expected });
      assert.equal(formatImageReference(ref), canonical);
      // Canonical output parses back to the same registry/repository/tag/digest.
      const again = parseImageReference(canonical);
      assert.deepEqual({ ...again, explicitRegistry: true }, { ...ref, explicitRegistry: true });
    });
  }
});

describe('parseImageReference: invalid references', () => {
  for (const [input, reason] of invalidReferences) {
    test(JSON.stringify(input), () => {
      assert.throws(
        () => parseImageReference(input),
        (error: unknown) => {
          assert.ok(error instanceof ImageReferenceError, 'an ImageReferenceError');
          assert.ok(error instanceof Error);
          assert.equal(error.name, 'ImageReferenceError');
          assert.equal(error.input, input);
          assert.match(error.message, reason);
          // Names the input, a long one by its first 300 characters.
          const quoted = input.length > 300 ? `${input.slice(0, 300)}…` : input;
          assert.ok(error.message.includes(JSON.stringify(quoted)), 'names the input');
          assert.ok(error.message.length < 400, 'a bounded message');
          return true;
        },
      );
    });
  }
});

describe('parseImageReference: digest algorithms runtimes do not know', () => {
  for (const digest of [
    `vendor+algo:${'A'.repeat(32)}`,
    `blake3:${'a'.repeat(64)}`,
    // go-digest's algorithm names are case-sensitive.
    `SHA256:${'a'.repeat(64)}`,
  ]) {
    test(digest, () => {
      const input = `reg.io/a@${digest}`;
      assert.throws(
        () => parseImageReference(input),
        (error: unknown) => {
          assert.ok(error instanceof UnsupportedDigestError);
          assert.ok(
            error instanceof ImageReferenceError,
            'callers that catch ImageReferenceError see it too',
          );
          assert.equal(error.algorithm, digest.slice(0, digest.indexOf(':')));
          assert.equal(error.input, input);
          assert.match(error.message, /unsupported digest algorithm/);
          return true;
        },
      );
    });
  }
});

describe('registry detection', () => {
  test('looksLikeRegistryHost follows distribution/reference', () => {
    for (const yes of [
      'ghcr.io',
      'localhost',
      'localhost:5000',
      'myhost:5000',
      '[::1]',
      'MyRegistry',
      'a.b',
    ]) {
      assert.equal(looksLikeRegistryHost(yes), true, yes);
    }
    for (const no of ['ghcr', 'library', 'my-team', 'local_host'])
      assert.equal(looksLikeRegistryHost(no), false, no);
  });

  test('canonicalRegistry: index.docker.io is docker.io, anything else itself', () => {
    assert.equal(canonicalRegistry('index.docker.io'), 'docker.io');
    assert.equal(canonicalRegistry('docker.io'), 'docker.io');
    assert.equal(canonicalRegistry('registry-1.docker.io'), 'registry-1.docker.io');
  });
});

describe('digests: exactly the encoding of their algorithm', () => {
  const hex = (n: number) => '0123456789abcdef'.repeat(8).slice(0, n);
  for (const [algorithm, length] of [
    ['sha256', 64],
    ['sha384', 96],
    ['sha512', 128],
  ] as const) {
    test(`${algorithm}: ${length} lowercase hex digits, not one more or less`, () => {
      const digest = `${algorithm}:${hex(length)}`;
      assert.equal(parseImageReference(`reg.io/a@${digest}`).digest, digest);
      for (const wrong of [
        hex(length - 1),
        `${hex(length)}a`,
        `a${hex(length)}`,
        hex(length).toUpperCase(),
      ]) {
        assert.throws(
          () => parseImageReference(`reg.io/a@${algorithm}:${wrong}`),
          /wrong length or not lowercase/,
        );
      }
    });
  }

  test('a digest is checked whole: nothing before its algorithm, nothing after its hex', () => {
    const invalid = (digest: string) => {
      const input = `reg.io/a@${digest}`;
      assert.throws(
        () => parseImageReference(input),
        (error: unknown) => {
          assert.ok(error instanceof ImageReferenceError);
          assert.ok(!(error instanceof UnsupportedDigestError), 'malformed, not an unknown algorithm');
          assert.equal(
            error.message,
            `invalid image reference ${JSON.stringify(input)}: invalid digest "${digest}"`,
          );
          return true;
        },
      );
    };
    invalid(`_sha256:${'a'.repeat(64)}`);
    invalid(`x@sha256:${'a'.repeat(64)}`);
    invalid(`sha256:${'a'.repeat(64)}-x`);
  });

  test('an unknown algorithm is named as such', () => {
    const error = (() => {
      try {
        parseImageReference(`reg.io/a@blake3:${'a'.repeat(64)}`);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(error instanceof UnsupportedDigestError);
    assert.equal(error.name, 'UnsupportedDigestError');
  });
});

describe('repositoryPathProblem', () => {
  test('says what is wrong with a path', () => {
    assert.equal(repositoryPathProblem('a/b'), undefined);
    assert.equal(repositoryPathProblem(''), 'repository path is empty');
    assert.equal(repositoryPathProblem('a//b'), 'repository path has an empty component');
    assert.equal(repositoryPathProblem('a/Bc'), 'repository must be lowercase, got "Bc"');
    assert.equal(repositoryPathProblem('a/b-'), 'invalid repository path component "b-"');
  });
});
