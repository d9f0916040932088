import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRegistryRewriter } from '../../../src/image/registry-rewrite.js';
import {
  alterImageRegistry,
  type AlterImageRegistryOptions,
} from '../../../src/mutation/alter-image-registry.js';
import type { Pod } from '../../../src/mutation/pod.js';
import { edit } from './support.js';

const rewrite = createRegistryRewriter({ 'replace.me': 'ghcr.io', 'docker.io': 'mirror.example.com/hub' });

interface Case {
  readonly name: string;
  readonly pod: Pod;
  readonly options?: Partial<AlterImageRegistryOptions>;
  readonly images: Readonly<Record<string, readonly (string | undefined)[]>>;
  readonly warnings?: RegExp[];
}

const cases: readonly Case[] = [
  {
    name: 'containers, init containers and ephemeral containers',
    pod: {
      spec: {
        containers: [
          { name: 'a', image: 'replace.me/x/a:1' },
          { name: 'b', image: 'gcr.io/b:2' },
        ],
        initContainers: [{ name: 'i', image: 'nginx:1.25' }],
        ephemeralContainers: [{ name: 'e', image: 'replace.me/debug' }],
      },
    },
    images: {
      containers: ['ghcr.io/x/a:1', 'gcr.io/b:2'],
      initContainers: ['mirror.example.com/hub/library/nginx:1.25'],
      ephemeralContainers: ['ghcr.io/debug'],
    },
  },
  {
    name: 'nothing matches: unchanged',
    pod: { spec: { containers: [{ name: 'a', image: 'ghcr.io/x:1' }] } },
    images: { containers: ['ghcr.io/x:1'] },
  },
  {
    name: 'no spec at all',
    pod: { metadata: { name: 'p' } },
    images: {},
  },
  {
    name: 'containers without image or with an empty one are skipped',
    pod: {
      spec: { containers: [{ name: 'a' }, { name: 'b', image: '' }, { name: 'c', image: 'replace.me/c' }] },
    },
    images: { containers: [undefined, '', 'ghcr.io/c'] },
  },
  {
    name: 'an unparseable image is left alone with a warning, the others are rewritten',
    pod: {
      spec: {
        containers: [
          { name: 'bad', image: 'replace.me/Upper:1' },
          { name: 'good', image: 'replace.me/ok:1' },
        ],
      },
    },
    images: { containers: ['replace.me/Upper:1', 'ghcr.io/ok:1'] },
    warnings: [/^containers\[0\] "bad": image left unchanged: invalid image reference "replace.me\/Upper:1"/],
  },
  {
    name: 'only the listed container kinds',
    pod: {
      spec: {
        containers: [{ name: 'a', image: 'replace.me/a' }],
        ephemeralContainers: [{ name: 'e', image: 'replace.me/e' }],
      },
    },
    options: { containerKinds: ['ephemeralContainers'] },
    images: { containers: ['replace.me/a'], ephemeralContainers: ['ghcr.io/e'] },
  },
  {
    name: 'with a previous Pod: only images the request changes are rewritten',
    pod: {
      spec: {
        containers: [
          { name: 'same', image: 'replace.me/same:1' },
          { name: 'changed', image: 'replace.me/changed:2' },
          { name: 'new', image: 'replace.me/new:1' },
        ],
      },
    },
    options: {
      containerKinds: ['containers'],
      previous: {
        spec: {
          containers: [
            { name: 'same', image: 'replace.me/same:1' },
            { name: 'changed', image: 'replace.me/changed:1' },
          ],
        },
      },
    },
    images: { containers: ['replace.me/same:1', 'ghcr.io/changed:2', 'ghcr.io/new:1'] },
  },
  {
    name: 'with a previous Pod: existing ephemeral containers are never touched, new ones are',
    pod: {
      spec: {
        containers: [],
        ephemeralContainers: [
          { name: 'old', image: 'replace.me/old' },
          { name: 'fresh', image: 'replace.me/fresh' },
        ],
      },
    },
    options: {
      containerKinds: ['ephemeralContainers'],
      previous: { spec: { containers: [], ephemeralContainers: [{ name: 'old', image: 'replace.me/old' }] } },
    },
    images: { ephemeralContainers: ['replace.me/old', 'ghcr.io/fresh'] },
  },
  {
    name: 'with a previous Pod: an existing ephemeral container is left alone even when its image differs',
    pod: {
      spec: {
        containers: [{ name: 'app', image: 'replace.me/app:2' }],
        ephemeralContainers: [{ name: 'old', image: 'replace.me/old:2' }],
      },
    },
    options: {
      previous: {
        spec: {
          containers: [{ name: 'app', image: 'replace.me/app:1' }],
          ephemeralContainers: [{ name: 'old', image: 'replace.me/old:1' }],
        },
      },
    },
    images: { containers: ['ghcr.io/app:2'], ephemeralContainers: ['replace.me/old:2'] },
  },
];

describe('alterImageRegistry', () => {
  for (const c of cases) {
    test(c.name, () => {
      const { result, pod, patch } = edit(c.pod, (b) => alterImageRegistry(b, { rewrite, ...c.options }));
      for (const [kind, images] of Object.entries(c.images)) {
        const list = (pod.spec as unknown as Record<string, { image?: string }[] | undefined>)[kind] ?? [];
        assert.deepEqual(
          list.map((container) => container.image),
          images,
          kind,
        );
      }
      assert.equal(result.changed, patch.length > 0);
      assert.ok(
        patch.every((op) => op.op === 'replace' && /^\/spec\/\w+\/\d+\/image$/.test(op.path)),
        'only image replacements',
      );
      assert.equal(result.warnings.length, c.warnings?.length ?? 0, result.warnings.join('\n'));
      c.warnings?.forEach((w, i) => {
        assert.match(result.warnings[i] ?? '', w);
      });
    });
  }

  test('the seed image', () => {
    const { patch } = edit(
      {
        spec: { containers: [{ name: 'pause', image: 'replace.me/kyma-project/rt-bootstrapper/pause:e2e' }] },
      },
      (b) => alterImageRegistry(b, { rewrite }),
    );
    assert.deepEqual(patch, [
      {
        op: 'replace',
        path: '/spec/containers/0/image',
        value: 'ghcr.io/kyma-project/rt-bootstrapper/pause:e2e',
      },
    ]);
  });
});
