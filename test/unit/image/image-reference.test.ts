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
  type ImageReference,
} from '../../../src/image/image-reference.js';

const SHA256 = `sha256:${'a'.repeat(64)}`;
const SHA512 = `sha512:${'0123456789abcdef'.repeat(8)}`;

type Expected = Omit<ImageReference, 'tag' | 'digest'> & { tag?: string; digest?: string };

const valid: readonly [input: string, expected: Expected, canonical: string][] = [
  [
    'nginx',
    { registry: 'docker.io', repository: 'library/nginx', explicitRegistry: false },
    'docker.io/library/nginx',
  ],
  [
    'nginx:1.25',
    { registry: 'docker.io', repository: 'library/nginx', tag: '1.25', explicitRegistry: false },
    'docker.io/library/nginx:1.25',
  ],
  [
    'library/nginx:1.25',
    { registry: 'docker.io', repository: 'library/nginx', tag: '1.25', explicitRegistry: false },
    'docker.io/library/nginx:1.25',
  ],
  [
    'bitnami/redis:7',
    { registry: 'docker.io', repository: 'bitnami/redis', tag: '7', explicitRegistry: false },
    'docker.io/bitnami/redis:7',
  ],
  [
    'docker.io/nginx',
    { registry: 'docker.io', repository: 'library/nginx', explicitRegistry: true },
    'docker.io/library/nginx',
  ],
  [
    'docker.io/library/nginx:latest',
    { registry: 'docker.io', repository: 'library/nginx', tag: 'latest', explicitRegistry: true },
    'docker.io/library/nginx:latest',
  ],
  // index.docker.io is Docker Hub's legacy name, read as docker.io (distribution/reference).
  [
    'index.docker.io/nginx',
    { registry: 'docker.io', repository: 'library/nginx', explicitRegistry: true },
    'docker.io/library/nginx',
  ],
  [
    'index.docker.io/bitnami/redis:7',
    { registry: 'docker.io', repository: 'bitnami/redis', tag: '7', explicitRegistry: true },
    'docker.io/bitnami/redis:7',
  ],
  // A first segment with an uppercase letter is a registry (a repository path never has one).
  [
    'MyRegistry/app:1',
    { registry: 'MyRegistry', repository: 'app', tag: '1', explicitRegistry: true },
    'MyRegistry/app:1',
  ],
  // The 255-character limit is on the repository path, not on the registry.
  [
    `${'r'.repeat(60)}.example.com/${'a'.repeat(255)}`,
    { registry: `${'r'.repeat(60)}.example.com`, repository: 'a'.repeat(255), explicitRegistry: true },
    `${'r'.repeat(60)}.example.com/${'a'.repeat(255)}`,
  ],
  [
    'ghcr.io/kyma-project/rt-bootstrapper/pause:e2e',
    {
      registry: 'ghcr.io',
      repository: 'kyma-project/rt-bootstrapper/pause',
      tag: 'e2e',
      explicitRegistry: true,
    },
    'ghcr.io/kyma-project/rt-bootstrapper/pause:e2e',
  ],
  ['localhost/x', { registry: 'localhost', repository: 'x', explicitRegistry: true }, 'localhost/x'],
  [
    'localhost:5000/x',
    { registry: 'localhost:5000', repository: 'x', explicitRegistry: true },
    'localhost:5000/x',
  ],
  [
    'localhost:5000/x:1',
    { registry: 'localhost:5000', repository: 'x', tag: '1', explicitRegistry: true },
    'localhost:5000/x:1',
  ],
  [
    // Without a slash, "localhost:5000" is a Docker Hub repository with tag 5000, as for runtimes.
    'localhost:5000',
    { registry: 'docker.io', repository: 'library/localhost', tag: '5000', explicitRegistry: false },
    'docker.io/library/localhost:5000',
  ],
  [
    'reg.io:443/a/b:t',
    { registry: 'reg.io:443', repository: 'a/b', tag: 't', explicitRegistry: true },
    'reg.io:443/a/b:t',
  ],
  ['myhost:5000/a', { registry: 'myhost:5000', repository: 'a', explicitRegistry: true }, 'myhost:5000/a'],
  ['[::1]:5000/a/b', { registry: '[::1]:5000', repository: 'a/b', explicitRegistry: true }, '[::1]:5000/a/b'],
  [
    '10.0.0.1:5000/a',
    { registry: '10.0.0.1:5000', repository: 'a', explicitRegistry: true },
    '10.0.0.1:5000/a',
  ],
  [
    'Registry.Example.COM/a',
    { registry: 'Registry.Example.COM', repository: 'a', explicitRegistry: true },
    'Registry.Example.COM/a',
  ],
  [
    'eu.gcr.io/p/a_b__c-d--e.f',
    { registry: 'eu.gcr.io', repository: 'p/a_b__c-d--e.f', explicitRegistry: true },
    'eu.gcr.io/p/a_b__c-d--e.f',
  ],
  [
    // A first segment without "." or ":" is a namespace, even when a registry of that name exists.
    'myregistry/team/app',
    { registry: 'docker.io', repository: 'myregistry/team/app', explicitRegistry: false },
    'docker.io/myregistry/team/app',
  ],
  [
    `nginx@${SHA256}`,
    { registry: 'docker.io', repository: 'library/nginx', digest: SHA256, explicitRegistry: false },
    `docker.io/library/nginx@${SHA256}`,
  ],
  [
    `nginx:1.25@${SHA256}`,
    {
      registry: 'docker.io',
      repository: 'library/nginx',
      tag: '1.25',
      digest: SHA256,
      explicitRegistry: false,
    },
    `docker.io/library/nginx:1.25@${SHA256}`,
  ],
  [
    `localhost:5000/x:v1.2_3-rc@${SHA512}`,
    { registry: 'localhost:5000', repository: 'x', tag: 'v1.2_3-rc', digest: SHA512, explicitRegistry: true },
    `localhost:5000/x:v1.2_3-rc@${SHA512}`,
  ],
  [
    // Without a slash nothing is a registry: "reg.io" alone is the Docker Hub repository library/reg.io.
    'reg.io',
    { registry: 'docker.io', repository: 'library/reg.io', explicitRegistry: false },
    'docker.io/library/reg.io',
  ],
  [
    `a:${'T'.repeat(128)}`,
    { registry: 'docker.io', repository: 'library/a', tag: 'T'.repeat(128), explicitRegistry: false },
    `docker.io/library/a:${'T'.repeat(128)}`,
  ],
];

describe('parseImageReference: valid references', () => {
  for (const [input, expected, canonical] of valid) {
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

const invalid: readonly [input: string, reason: RegExp][] = [
  ['', /empty/],
  [' nginx', /whitespace/],
  ['nginx ', /whitespace/],
  ['ngi nx', /whitespace/],
  ['nginx\t', /whitespace/],
  ['nginx\n:1', /whitespace/],
  ['Nginx', /lowercase/],
  ['docker.io/Library/nginx', /lowercase/],
  ['ghcr.io/Kyma-Project/x', /lowercase/],
  ['myregistry/Team/app', /lowercase/],
  ['nginx@sha256:abc', /invalid digest/],
  [`nginx@sha256:${'A'.repeat(64)}`, /not lowercase hex/],
  [`nginx@sha256:${'a'.repeat(63)}`, /wrong length/],
  [`nginx@sha512:${'a'.repeat(64)}`, /wrong length/],
  [`nginx@${'a'.repeat(64)}`, /invalid digest/],
  ['nginx@', /invalid digest/],
  [`nginx@${SHA256}@${SHA256}`, /invalid digest/],
  ['nginx:', /invalid tag/],
  ['nginx:-x', /invalid tag/],
  ['nginx:.x', /invalid tag/],
  [`nginx:${'t'.repeat(129)}`, /invalid tag/],
  ['nginx:a:b', /invalid tag|invalid repository/],
  [':1.0', /no repository/],
  [`@${SHA256}`, /no repository/],
  ['/nginx', /empty component/],
  ['nginx/', /empty component/],
  ['a//b', /empty component/],
  ['reg.io/', /empty/],
  ['-bad.io/a', /invalid registry/],
  ['bad-.io/a', /invalid registry/],
  ['reg.io:port/a', /invalid registry/],
  ['reg..io/a', /invalid registry/],
  ['a/-b', /invalid repository/],
  ['a/b-', /invalid repository/],
  ['a/b___c', /invalid repository/],
  ['a/b..c', /invalid repository/],
  ['a/ü', /invalid repository/],
  ['a'.repeat(256), /repository path longer than 255/],
  // The Docker Hub path counts with its library/ prefix, as runtimes normalise it.
  ['a'.repeat(250), /repository path longer than 255/],
  [`reg.io/${'a'.repeat(256)}`, /repository path longer than 255/],
  ['a'.repeat(64), /image ID/],
  ['MyReg_istry/app', /invalid registry/],
  // Refused before any of it is scanned: a Pod's creator writes the image.
  [`reg.io/${'a/'.repeat(600)}a`, /longer than 1024 characters/],
];

describe('parseImageReference: invalid references', () => {
  for (const [input, reason] of invalid) {
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
