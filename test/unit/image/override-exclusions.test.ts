import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ImageReferenceError, parseImageReference } from '../../../src/image/image-reference.js';
import {
  createExclusionMatcher,
  overrideExclusionProblem,
  parseOverrideExclusion,
  type OverrideExclusion,
} from '../../../src/image/override-exclusions.js';
import { createRegistryRewriter, rewriteImage } from '../../../src/image/registry-rewrite.js';
import {
  exclusionCases,
  rewriteCases,
  rewriteExclusions,
  rewriteOverrides,
} from '../../support/mutation-cases.js';

const SHA256 = `sha256:${'b'.repeat(64)}`;
const excludes = (entries: readonly string[], image: string): boolean =>
  createExclusionMatcher(entries)(parseImageReference(image));

const NGINX = { kind: 'repository', registry: 'docker.io', repository: 'library/nginx' } as const;
const BELOW_BITNAMI = { kind: 'below', registry: 'docker.io', path: 'bitnami' } as const;

/** What entries read as, by rule: each entry and its parse. */
const parsedEntries: Record<string, readonly [entry: string, parsed: OverrideExclusion][]> = {
  'without tag and digest an entry is a repository prefix, normalized as runtimes read it': [
    ['nginx', NGINX],
    ['library/nginx', NGINX],
    ['docker.io/nginx', NGINX],
    ['index.docker.io/library/nginx', NGINX],
    ['localhost:5000/a/b', { kind: 'repository', registry: 'localhost:5000', repository: 'a/b' }],
  ],
  'with a tag, a digest or both an entry is an image': [
    ['nginx:1.25', { ...NGINX, kind: 'image', tag: '1.25', digest: undefined }],
    [
      `ghcr.io/a:1@${SHA256}`,
      { kind: 'image', registry: 'ghcr.io', repository: 'a', tag: '1', digest: SHA256 },
    ],
  ],
  'a path and `/*`: the repositories below it, read without Docker Hub’s library/': [
    ['bitnami/*', BELOW_BITNAMI],
    ['docker.io/bitnami/*', BELOW_BITNAMI],
    ['index.docker.io/bitnami/*', BELOW_BITNAMI],
    ['library/*', { kind: 'below', registry: 'docker.io', path: 'library' }],
    ['localhost:5000/org/team/*', { kind: 'below', registry: 'localhost:5000', path: 'org/team' }],
  ],
};

describe('parseOverrideExclusion', () => {
  for (const [rule, entries] of Object.entries(parsedEntries))
    test(rule, () => {
      for (const [entry, parsed] of entries) assert.deepEqual(parseOverrideExclusion(entry), parsed, entry);
    });

  test('refused: no reference, an uppercase repository, a bare registry', () => {
    for (const [entry, reason] of [
      ['', /empty/],
      ['ghcr.io/', /repository path is empty/],
      ['docker.io/library/NGINX', /lowercase/],
      ['NGINX', /lowercase/],
      ['a b', /whitespace/],
      ['nginx@md5:abc', /digest/],
      [`reg.io/${'a/'.repeat(600)}a`, /longer than 1024/],
      ['ghcr.io', /not a registry; a registry is kept by giving it no override/],
      ['localhost', /not a registry/],
      ['localhost:5000', /not a registry/],
      ['quay.io:443', /not a registry/],
      ['ghcr.io/*', /names no path under registry "ghcr.io"; a registry is kept by giving it no override/],
      ['localhost/*', /names no path/],
      ['/*', /repository path is empty/],
      ['a//*', /empty component/],
      ['x/*/*', /invalid repository path component "\*"/],
      ['ghcr.io/Org/*', /lowercase/],
      ['bad_host:x/a/*', /invalid registry/],
      [`ghcr.io/${'a'.repeat(254)}/*`, /no repository below a path of 254 characters/],
      [`ghcr.io/${'a/'.repeat(600)}*`, /longer than 1024/],
      ['*', /invalid repository path component/],
      ['nginx:*', /invalid tag/],
    ] as const) {
      assert.throws(() => parseOverrideExclusion(entry), ImageReferenceError, entry);
      assert.match(overrideExclusionProblem(entry) ?? '', reason, entry);
    }
    assert.equal(overrideExclusionProblem('nginx'), undefined);
  });
});

/**
 * Whether entries exclude an image, by rule: groups of entries, each with the images matched
 * against them and whether they are excluded (and why, where it is not plain).
 */
const matchedImages: Record<
  string,
  readonly [entries: readonly string[], images: readonly [image: string, excluded: boolean, why?: string][]][]
> = {
  'no entries excludes nothing': [[[], [['nginx', false]]]],
  'a repository prefix ends at a path boundary': [
    [
      ['docker.io/library/nginx'],
      [
        ['nginx', true],
        ['nginx:1', true],
        [`nginx@${SHA256}`, true],
        ['docker.io/library/nginx/sub', true],
        ['docker.io/library/nginx-foo', false],
        ['docker.io/library/nginxx', false],
        ['docker.io/library/ngin', false],
        ['docker.io/library', false],
        ['ghcr.io/library/nginx', false],
      ],
    ],
  ],
  'a prefix covers everything below it, and two prefixes share their path': [
    [
      ['ghcr.io/org/team', 'ghcr.io/org/other/deep'],
      [
        ['ghcr.io/org/team/a/b:1', true],
        ['ghcr.io/org/other/deep/x', true],
        ['ghcr.io/org/other/x', false],
        ['ghcr.io/org/x', false],
      ],
    ],
  ],
  'an image: each part the entry names must be the image’s; no tag reads as latest': [
    [
      ['nginx:1.25'],
      [
        ['nginx:1.25', true],
        [`nginx:1.25@${SHA256}`, true],
        ['nginx:1.26', false],
        [`nginx@${SHA256}`, false],
        ['nginx/sub:1.25', false],
      ],
    ],
    [
      ['nginx:latest'],
      [
        ['nginx', true],
        [`nginx@${SHA256}`, false],
      ],
    ],
    [
      [`nginx@${SHA256}`],
      [
        [`nginx:any@${SHA256}`, true],
        ['nginx:any', false],
      ],
    ],
    [
      [`nginx:1@${SHA256}`],
      [
        [`nginx@${SHA256}`, false],
        [`nginx:1@${SHA256}`, true],
      ],
    ],
    // Tags are case-sensitive, as registries read them.
    [['nginx:V1'], [['nginx:v1', false]]],
  ],
  'registries compare exactly: port included, index.docker.io is docker.io, no case folding': [
    [
      ['localhost:5000/a'],
      [
        ['localhost:5000/a', true],
        ['localhost:5001/a', false],
        ['localhost/a', false],
      ],
    ],
    [['index.docker.io/x/y'], [['x/y', true]]],
    [['x/y:1'], [['index.docker.io/x/y:1', true]]],
    [
      ['Ghcr.io/a'],
      [
        ['Ghcr.io/a', true],
        ['ghcr.io/a', false],
      ],
    ],
    [['ghcr.io/a'], [['Ghcr.io/a', false]]],
  ],
  'a path and `/*` keeps the repositories below it, not the path itself': [
    [
      ['bitnami/*', 'ghcr.io/org/*'],
      [
        ['bitnami/redis', true],
        ['docker.io/bitnami/redis/x:1', true],
        ['index.docker.io/bitnami/redis', true],
        ['bitnami', false, 'docker.io/library/bitnami'],
        ['docker.io/bitnamix/redis', false],
        ['ghcr.io/org/a', true],
        ['ghcr.io/org/a/b@' + SHA256, true],
        ['ghcr.io/org:1', false],
        ['ghcr.io/organ/a', false],
      ],
    ],
    // With the repository itself named too, both.
    [['bitnami/*', 'ghcr.io/org/*', 'ghcr.io/org'], [['ghcr.io/org:1', true]]],
    [['library/*'], [['nginx', true]]],
  ],
  'names of Object.prototype are plain keys': [
    [['a.io/constructor'], [['a.io/constructor/x', true]]],
    [
      ['a.io/x'],
      [
        ['a.io/constructor', false],
        ['a.io/x/tostring', true],
      ],
    ],
    [['a.io/x/y'], [['a.io/x/hasownproperty', false]]],
  ],
};

describe('createExclusionMatcher', () => {
  for (const [rule, groups] of Object.entries(matchedImages))
    test(rule, () => {
      for (const [entries, images] of groups)
        for (const [image, excluded, why] of images) assert.equal(excludes(entries, image), excluded, why);
    });

  test('an invalid entry throws', () => {
    assert.throws(() => createExclusionMatcher(['nginx', 'ghcr.io']), ImageReferenceError);
  });
});

describe('createRegistryRewriter with exclusions', () => {
  for (const [name, image, expected] of exclusionCases) {
    test(`${name}: ${image}`, () => {
      assert.equal(rewriteImage(image, rewriteOverrides, rewriteExclusions), expected);
      if (expected !== undefined)
        assert.equal(rewriteImage(expected, rewriteOverrides, rewriteExclusions), undefined);
    });
  }

  test('no exclusions: every case of the rewrite table as before', () => {
    for (const [name, image, expected] of rewriteCases) {
      assert.equal(rewriteImage(image, rewriteOverrides, []), expected, name);
      assert.equal(createRegistryRewriter(rewriteOverrides)(image), expected, name);
    }
  });

  test('an excluded image is still parsed: an invalid one throws as without exclusions', () => {
    assert.throws(
      () => rewriteImage('replace.me/UPPER', rewriteOverrides, ['replace.me/x']),
      ImageReferenceError,
    );
    assert.throws(() => rewriteImage('', {}, ['nginx']), ImageReferenceError);
  });

  test('an invalid exclusion makes no rewriter', () => {
    assert.throws(() => createRegistryRewriter(rewriteOverrides, ['ghcr.io']), ImageReferenceError);
  });
});
