/**
 * Case tables shared by the unit tests of the mutation and image references and by the admission
 * policy's differential test (test/integration/admission-policy-differential.test.ts), which runs
 * every case through a real API server: one table, read by both.
 */
import {
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE as CTB,
  FEATURE_ADD_IMG_PULL_SECRET as PULL,
  FEATURE_ALL as ALL,
  FEATURE_ALTER_IMG_REGISTRY as IMG,
  FEATURE_SET_FIPS_MODE as FIPS,
  FEATURE_SET_LANDSCAPE as LAND,
  FEATURES,
  type Feature,
  type FeatureKey,
} from '../../src/api/webhook-features.js';
import type { ImageReference } from '../../src/image/image-reference.js';

/** One row of selectFeatures' truth table: the config, the three levels, the features selected. */
export interface FeatureRow {
  readonly name: string;
  readonly available: readonly FeatureKey[];
  readonly namespaceFeatures?: Readonly<Record<string, readonly FeatureKey[]>>;
  readonly namespaceName?: string;
  readonly ns?: Readonly<Record<string, string>>;
  readonly pod?: Readonly<Record<string, string>>;
  readonly expected: readonly Feature[];
}

export const featureRows: readonly FeatureRow[] = [
  { name: 'nothing says true', available: [ALL], expected: [] },
  { name: 'nothing available', available: [], pod: { [ALL]: 'true' }, ns: { [ALL]: 'true' }, expected: [] },
  // config namespaceFeatures
  {
    name: 'config default for the namespace',
    available: [ALL],
    namespaceFeatures: { team: [FIPS] },
    expected: [FIPS],
  },
  {
    name: 'config default `all`',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    expected: [...FEATURES],
  },
  {
    name: 'config `all` is limited to what is available',
    available: [IMG, CTB],
    namespaceFeatures: { team: [ALL] },
    expected: [IMG, CTB],
  },
  {
    name: 'config default for another namespace',
    available: [ALL],
    namespaceFeatures: { other: [ALL] },
    expected: [],
  },
  {
    name: 'empty namespace name means "default"',
    available: [ALL],
    namespaceFeatures: { default: [PULL] },
    namespaceName: '',
    expected: [PULL],
  },
  // Namespace annotations
  { name: 'namespace annotation true', available: [ALL], ns: { [IMG]: 'true' }, expected: [IMG] },
  { name: 'namespace annotation `all`', available: [ALL], ns: { [ALL]: 'true' }, expected: [...FEATURES] },
  {
    name: 'namespace annotation not "true"',
    available: [ALL],
    ns: { [IMG]: 'True', [FIPS]: 'yes' },
    expected: [],
  },
  {
    name: 'namespace "false" does not cancel the config default',
    available: [ALL],
    namespaceFeatures: { team: [FIPS] },
    ns: { [FIPS]: 'false' },
    expected: [FIPS],
  },
  // Pod annotations
  { name: 'pod annotation true', available: [ALL], pod: { [CTB]: 'true' }, expected: [CTB] },
  { name: 'pod annotation `all`', available: [ALL], pod: { [ALL]: 'true' }, expected: [...FEATURES] },
  {
    name: 'pod annotation not in availableFeatures',
    available: [IMG],
    pod: { [FIPS]: 'true' },
    expected: [],
  },
  {
    name: 'the seed Pod (all four annotated, all four available)',
    available: [IMG, PULL, FIPS, CTB],
    pod: { [IMG]: 'true', [PULL]: 'true', [CTB]: 'true', [FIPS]: 'true' },
    expected: [IMG, PULL, FIPS, CTB],
  },
  // Pod opt-out
  {
    name: 'pod "false" opts out of a config default',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    pod: { [FIPS]: 'false' },
    expected: [IMG, PULL, CTB, LAND],
  },
  {
    name: 'pod "false" opts out of a namespace annotation',
    available: [ALL],
    ns: { [IMG]: 'true', [PULL]: 'true' },
    pod: { [IMG]: 'false' },
    expected: [PULL],
  },
  {
    name: 'pod `all: "false"` opts out of everything',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    ns: { [ALL]: 'true' },
    pod: { [ALL]: 'false' },
    expected: [],
  },
  {
    name: 'pod: the specific key beats `all` ("false" all, "true" one)',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    pod: { [ALL]: 'false', [FIPS]: 'true' },
    expected: [FIPS],
  },
  {
    name: 'pod: the specific key beats `all` ("true" all, "false" one)',
    available: [ALL],
    pod: { [ALL]: 'true', [CTB]: 'false' },
    expected: [IMG, PULL, FIPS, LAND],
  },
  // A feature's own key with any value shadows `all` at its level (upstream's ExpandAnnotationAll).
  {
    name: 'namespace: own key with another value shadows `all` for that feature',
    available: [ALL],
    ns: { [ALL]: 'true', [FIPS]: 'restart' },
    expected: [IMG, PULL, CTB, LAND],
  },
  {
    name: 'namespace: own key "false" shadows `all` but does not cancel the config default',
    available: [ALL],
    namespaceFeatures: { team: [IMG] },
    ns: { [ALL]: 'true', [IMG]: 'false' },
    expected: [IMG, PULL, FIPS, CTB, LAND],
  },
  {
    name: 'pod: own key with another value shadows `all: "true"`; other levels still count',
    available: [ALL],
    namespaceFeatures: { team: [CTB] },
    pod: { [ALL]: 'true', [CTB]: 'restart-on-change', [PULL]: 'x' },
    expected: [IMG, FIPS, CTB, LAND],
  },
  {
    name: 'pod: own key with another value shadows `all: "false"` (no opt-out for it)',
    available: [ALL],
    ns: { [FIPS]: 'true', [IMG]: 'true' },
    pod: { [ALL]: 'false', [FIPS]: 'maybe' },
    expected: [FIPS],
  },
  {
    name: 'set-landscape by its own annotation',
    available: [LAND],
    pod: { [LAND]: 'true' },
    expected: [LAND],
  },
  {
    name: 'pod value other than true/false falls through to the namespace',
    available: [ALL],
    ns: { [PULL]: 'true' },
    pod: { [PULL]: 'no', [IMG]: 'maybe' },
    expected: [PULL],
  },
  {
    name: 'sources add up',
    available: [ALL],
    namespaceFeatures: { team: [IMG] },
    ns: { [PULL]: 'true' },
    pod: { [CTB]: 'true' },
    expected: [IMG, PULL, CTB],
  },
  {
    name: 'unknown rt-cfg keys are ignored',
    available: [ALL],
    pod: { 'rt-cfg.kyma-project.io/set-something': 'true' },
    expected: [],
  },
  {
    name: 'namespace named like an Object member',
    available: [ALL],
    namespaceName: 'constructor',
    expected: [],
  },
];

/** Valid references: input, parsed, canonical. */
/** A sha256 digest of the reference tables. */
export const SHA256 = `sha256:${'a'.repeat(64)}`;
/** A sha512 digest of the reference tables. */
export const SHA512 = `sha512:${'0123456789abcdef'.repeat(8)}`;

export type Expected = Omit<ImageReference, 'tag' | 'digest'> & { tag?: string; digest?: string };

export const validReferences: readonly [input: string, expected: Expected, canonical: string][] = [
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

/** Invalid references and why. */
export const invalidReferences: readonly [input: string, reason: RegExp][] = [
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

/** The overrides of the rewrite table. */
const SHA256_B = `sha256:${'b'.repeat(64)}`;

export const rewriteOverrides = {
  'replace.me': 'ghcr.io',
  'docker.io': 'mirror.example.com/dockerhub',
  'localhost:5000': 'registry.internal:5443',
  'quay.io:443': 'mirror.example.com/quay/443',
};

export const rewriteCases: readonly [name: string, image: string, expected: string | undefined][] = [
  [
    'seed example',
    'replace.me/kyma-project/rt-bootstrapper/pause:e2e',
    'ghcr.io/kyma-project/rt-bootstrapper/pause:e2e',
  ],
  ['explicit host, digest kept', `replace.me/a@${SHA256_B}`, `ghcr.io/a@${SHA256_B}`],
  ['explicit host, tag and digest kept', `replace.me/a/b:1@${SHA256_B}`, `ghcr.io/a/b:1@${SHA256_B}`],
  ['implicit docker.io, short name', 'nginx:1.25', 'mirror.example.com/dockerhub/library/nginx:1.25'],
  ['implicit docker.io, no tag', 'nginx', 'mirror.example.com/dockerhub/library/nginx'],
  ['implicit docker.io, namespace', 'bitnami/redis:7', 'mirror.example.com/dockerhub/bitnami/redis:7'],
  ['explicit docker.io', 'docker.io/nginx', 'mirror.example.com/dockerhub/library/nginx'],
  ['explicit docker.io/library', 'docker.io/library/nginx:x', 'mirror.example.com/dockerhub/library/nginx:x'],
  ['port is part of the host', 'localhost:5000/x:1', 'registry.internal:5443/x:1'],
  ['port must match exactly (other port)', 'localhost:5001/x:1', undefined],
  ['port must match exactly (no port)', 'localhost/x:1', undefined],
  ['port-qualified key', 'quay.io:443/org/app:2', 'mirror.example.com/quay/443/org/app:2'],
  ['port-qualified key does not match bare host', 'quay.io/org/app:2', undefined],
  [
    'index.docker.io is Docker Hub',
    'index.docker.io/library/nginx',
    'mirror.example.com/dockerhub/library/nginx',
  ],
  [
    'index.docker.io, one segment gets library/',
    'index.docker.io/nginx:1',
    'mirror.example.com/dockerhub/library/nginx:1',
  ],
  ['no case folding of hosts', 'Replace.Me/a', undefined],
  ['suffix of a key is not a match', 'x.replace.me/a', undefined],
  ['non-matching host unchanged', 'gcr.io/distroless/static', undefined],
  ['already at bare target', 'ghcr.io/kyma-project/x:1', undefined],
  ['already under path-prefix target', 'mirror.example.com/dockerhub/library/nginx:1.25', undefined],
  ['prefix must end at a path boundary', 'mirror.example.com/dockerhub2/x', undefined],
  ['target host outside the prefix is not a target', 'mirror.example.com/other/x', undefined],
];

/**
 * The exclusions of the exclusion table (the config's `overrideExclusions`), with rewriteOverrides:
 * repository prefixes and images, named in each spelling runtimes read alike.
 */
export const rewriteExclusions: readonly string[] = [
  'nginx',
  'replace.me/kyma-project/keep',
  'replace.me/pinned:1.0',
  `replace.me/bydigest@${SHA256_B}`,
  'bitnami/redis:latest',
  'index.docker.io/library/busybox:1.36',
  'localhost:5000/keep',
  'team/*',
  'replace.me/org/*',
];

const SHA256_C = `sha256:${'c'.repeat(64)}`;

/** Images under rewriteOverrides and rewriteExclusions: the rewrite, or undefined where left alone. */
export const exclusionCases: readonly [name: string, image: string, expected: string | undefined][] = [
  ['prefix: the short name', 'nginx', undefined],
  ['prefix: any tag', 'nginx:1.25', undefined],
  ['prefix: any digest', `nginx@${SHA256_B}`, undefined],
  ['prefix: explicit docker.io/library', 'docker.io/library/nginx:1', undefined],
  ['prefix: index.docker.io is Docker Hub', 'index.docker.io/nginx', undefined],
  ['prefix: library/ spelled out', 'library/nginx:2', undefined],
  ['prefix: a repository below it', 'docker.io/library/nginx/sub:1', undefined],
  [
    'prefix ends at a path boundary (-foo)',
    'nginx-foo:1',
    'mirror.example.com/dockerhub/library/nginx-foo:1',
  ],
  [
    'prefix ends at a path boundary (longer name)',
    'docker.io/library/nginxx',
    'mirror.example.com/dockerhub/library/nginxx',
  ],
  ['prefix of a path: the repository', 'replace.me/kyma-project/keep:2', undefined],
  ['prefix of a path: below it', 'replace.me/kyma-project/keep/sub', undefined],
  ['prefix of a path: a longer sibling', 'replace.me/kyma-project/keeper:2', 'ghcr.io/kyma-project/keeper:2'],
  [
    'prefix of a path: its parent is not excluded',
    'replace.me/kyma-project/other:2',
    'ghcr.io/kyma-project/other:2',
  ],
  ['image by tag: that tag', 'replace.me/pinned:1.0', undefined],
  ['image by tag: another tag', 'replace.me/pinned:1.1', 'ghcr.io/pinned:1.1'],
  ['image by tag: the tag with a digest', `replace.me/pinned:1.0@${SHA256_B}`, undefined],
  ['image by tag: no tag is latest', 'replace.me/pinned', 'ghcr.io/pinned'],
  ['image by tag: no prefix', 'replace.me/pinned/sub:1.0', 'ghcr.io/pinned/sub:1.0'],
  ['image by digest: that digest', `replace.me/bydigest@${SHA256_B}`, undefined],
  ['image by digest: with a tag', `replace.me/bydigest:v1@${SHA256_B}`, undefined],
  ['image by digest: another digest', `replace.me/bydigest@${SHA256_C}`, `ghcr.io/bydigest@${SHA256_C}`],
  ['image by digest: a tag alone', 'replace.me/bydigest:v1', 'ghcr.io/bydigest:v1'],
  ['image :latest: no tag', 'bitnami/redis', undefined],
  ['image :latest: latest', 'docker.io/bitnami/redis:latest', undefined],
  ['image :latest: another tag', 'bitnami/redis:7', 'mirror.example.com/dockerhub/bitnami/redis:7'],
  [
    'image :latest: a digest alone is no tag',
    `bitnami/redis@${SHA256_B}`,
    `mirror.example.com/dockerhub/bitnami/redis@${SHA256_B}`,
  ],
  ['image on index.docker.io: short name', 'busybox:1.36', undefined],
  [
    'image on index.docker.io: another tag',
    'busybox:1.37',
    'mirror.example.com/dockerhub/library/busybox:1.37',
  ],
  ['port: the excluded repository', 'localhost:5000/keep:1', undefined],
  ['port: another repository', 'localhost:5000/other:1', 'registry.internal:5443/other:1'],
  ['below a Docker Hub namespace', 'team/app:1', undefined],
  ['below a Docker Hub namespace, deeper', 'docker.io/team/sub/app', undefined],
  [
    'below a namespace: not the library image of its name',
    'team',
    'mirror.example.com/dockerhub/library/team',
  ],
  ['below a namespace: a longer namespace', 'teams/app', 'mirror.example.com/dockerhub/teams/app'],
  ['below a path', 'replace.me/org/a:1', undefined],
  ['below a path: not the path itself', 'replace.me/org:1', 'ghcr.io/org:1'],
  ['not excluded: an image of no exclusion', 'replace.me/app:1', 'ghcr.io/app:1'],
];
