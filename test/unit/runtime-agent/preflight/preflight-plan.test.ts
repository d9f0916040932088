import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FEATURE_ALL as ALL,
  FEATURE_ALTER_IMG_REGISTRY as IMG,
  FEATURE_SET_FIPS_MODE as FIPS,
  type FeatureKey,
} from '../../../../src/api/webhook-features.js';
import { ORIGINAL_IMAGES_ANNOTATION } from '../../../../src/api/workload-health.js';
import {
  DEFAULT_PREFLIGHT_MAX_IMAGES,
  planPreflight,
  readOriginalImages,
  type PlanNamespace,
  type PlanPod,
  type PreflightPlanInput,
} from '../../../../src/runtime-agent/preflight/preflight-plan.js';

const config = (
  o: {
    overrides?: Record<string, string>;
    available?: readonly FeatureKey[];
    namespaceFeatures?: Record<string, readonly FeatureKey[]>;
  } = {},
): PreflightPlanInput['config'] => ({
  overrides: o.overrides ?? { 'docker.io': 'mirror.example.com/hub', 'ghcr.io': 'mirror.example.com/ghcr' },
  availableFeatures: o.available ?? [IMG],
  namespaceFeatures: o.namespaceFeatures ?? { apps: [IMG] },
});

const pod = (
  namespace: string | undefined,
  images: readonly string[],
  o: { annotations?: Record<string, string>; init?: readonly string[]; ephemeral?: readonly string[] } = {},
): PlanPod => ({
  metadata: {
    ...(namespace !== undefined ? { namespace } : {}),
    ...(o.annotations ? { annotations: o.annotations } : {}),
  },
  spec: {
    containers: images.map((image, i) => ({ name: `c${i}`, image })),
    ...(o.init ? { initContainers: o.init.map((image, i) => ({ name: `i${i}`, image })) } : {}),
    ...(o.ephemeral
      ? { ephemeralContainers: o.ephemeral.map((image, i) => ({ name: `e${i}`, image })) }
      : {}),
  },
});

const ns = (name: string, annotations?: Record<string, string>): PlanNamespace => ({
  metadata: { name, ...(annotations ? { annotations } : {}) },
});

const targets = (input: Partial<PreflightPlanInput>): string[] =>
  planPreflight({ pods: [], namespaces: [], config: config(), ...input }).images.map((i) => i.target);

describe('planPreflight', () => {
  test('rewrites each image of a Pod the feature applies to, keeping the original beside the target', () => {
    const plan = planPreflight({
      pods: [pod('apps', ['nginx:1.27', 'ghcr.io/org/app@sha256:' + 'a'.repeat(64)])],
      namespaces: [ns('apps')],
      config: config(),
    });
    assert.deepEqual(plan, {
      images: [
        {
          image: 'ghcr.io/org/app@sha256:' + 'a'.repeat(64),
          target: 'mirror.example.com/ghcr/org/app@sha256:' + 'a'.repeat(64),
        },
        { image: 'nginx:1.27', target: 'mirror.example.com/hub/library/nginx:1.27' },
      ],
      skipped: 0,
      unparseable: 0,
    });
  });

  test('images the candidate does not move are left out', () => {
    assert.deepEqual(
      targets({ pods: [pod('apps', ['quay.io/x/y:1', 'mirror.example.com/hub/library/nginx:1'])] }),
      [],
    );
  });

  test("images the candidate's overrideExclusions name are not moved, so not checked", () => {
    const pods = [
      pod('apps', ['nginx:1.27', 'nginx-foo:1', 'ghcr.io/org/keep/app:1', 'ghcr.io/org/app:1'], {
        init: ['busybox:1.36'],
        ephemeral: ['busybox:1.37'],
      }),
    ];
    const excluding = {
      ...config(),
      overrideExclusions: ['docker.io/library/nginx', 'ghcr.io/org/keep', 'busybox:1.36'],
    };
    assert.deepEqual(targets({ pods, config: excluding }), [
      'mirror.example.com/ghcr/org/app:1',
      'mirror.example.com/hub/library/busybox:1.37',
      'mirror.example.com/hub/library/nginx-foo:1',
    ]);
    // Without them every image is checked.
    assert.equal(targets({ pods }).length, 6);
    // A Pod we rewrote before the exclusion: its original, now excluded, is not checked either.
    const rewritten = pod('apps', ['mirror.example.com/hub/library/nginx:1'], {
      annotations: { [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ c0: 'nginx:1' }) },
    });
    assert.deepEqual(targets({ pods: [rewritten], config: excluding }), []);
  });

  test('init and ephemeral containers count too', () => {
    assert.deepEqual(
      targets({ pods: [pod('apps', [], { init: ['busybox:1'], ephemeral: ['ghcr.io/a/debug:2'] })] }),
      ['mirror.example.com/ghcr/a/debug:2', 'mirror.example.com/hub/library/busybox:1'],
    );
  });

  test('a Pod we rewrote is planned from its original image, per container name', () => {
    const rewritten = pod('apps', ['current.example.com/library/nginx:1', 'ghcr.io/o/side:3'], {
      annotations: {
        [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ c0: 'nginx:1', other: 'ghcr.io/o/gone:1' }),
      },
    });
    const plan = planPreflight({ pods: [rewritten], namespaces: [], config: config() });
    assert.deepEqual(plan.images, [
      { image: 'ghcr.io/o/side:3', target: 'mirror.example.com/ghcr/o/side:3' },
      { image: 'nginx:1', target: 'mirror.example.com/hub/library/nginx:1' },
    ]);
  });

  test('a malformed original-images annotation falls back to the images', () => {
    for (const value of ['{', '[]', '"x"', JSON.stringify({ c0: 7 }), JSON.stringify({ c0: '' })])
      assert.deepEqual(
        targets({
          pods: [pod('apps', ['nginx:1'], { annotations: { [ORIGINAL_IMAGES_ANNOTATION]: value } })],
        }),
        ['mirror.example.com/hub/library/nginx:1'],
        value,
      );
  });

  test('the same target from many Pods and spellings is checked once, with the first original seen', () => {
    const plan = planPreflight({
      pods: [
        pod('apps', ['nginx:1', 'docker.io/library/nginx:1']),
        pod('apps', ['index.docker.io/library/nginx:1']),
      ],
      namespaces: [],
      config: config(),
    });
    assert.deepEqual(plan.images, [{ image: 'nginx:1', target: 'mirror.example.com/hub/library/nginx:1' }]);
  });

  describe('which Pods the feature applies to under the candidate', () => {
    test('by the candidate namespace defaults', () => {
      assert.deepEqual(targets({ pods: [pod('other', ['nginx:1'])] }), []);
      assert.deepEqual(
        targets({
          pods: [pod('other', ['nginx:1'])],
          config: config({ namespaceFeatures: { other: [ALL] } }),
        }),
        ['mirror.example.com/hub/library/nginx:1'],
      );
    });

    test('by the Namespace annotation', () => {
      const pods = [pod('labelled', ['nginx:1'])];
      assert.deepEqual(targets({ pods, namespaces: [ns('labelled', { [IMG]: 'true' })] }), [
        'mirror.example.com/hub/library/nginx:1',
      ]);
      assert.deepEqual(targets({ pods, namespaces: [ns('labelled', { [ALL]: 'true' })] }), [
        'mirror.example.com/hub/library/nginx:1',
      ]);
      // The feature's own key shadows `all` at that level.
      assert.deepEqual(targets({ pods, namespaces: [ns('labelled', { [ALL]: 'true', [IMG]: 'no' })] }), []);
    });

    test('by the Pod annotation, and a Pod opting out is not checked', () => {
      assert.deepEqual(targets({ pods: [pod('other', ['nginx:1'], { annotations: { [IMG]: 'true' } })] }), [
        'mirror.example.com/hub/library/nginx:1',
      ]);
      assert.deepEqual(
        targets({ pods: [pod('apps', ['nginx:1'], { annotations: { [IMG]: 'false' } })] }),
        [],
      );
      assert.deepEqual(
        targets({ pods: [pod('apps', ['nginx:1'], { annotations: { [ALL]: 'false' } })] }),
        [],
      );
    });

    test('a Namespace saying "false" does not opt out of the candidate defaults (DESIGN §3)', () => {
      assert.deepEqual(
        targets({ pods: [pod('apps', ['nginx:1'])], namespaces: [ns('apps', { [IMG]: 'false' })] }),
        ['mirror.example.com/hub/library/nginx:1'],
      );
    });

    test('the candidate availableFeatures decide, not the config in force', () => {
      const pods = [pod('apps', ['nginx:1'])];
      assert.deepEqual(
        targets({ pods, config: config({ available: [FIPS], namespaceFeatures: { apps: [ALL] } }) }),
        [],
      );
      assert.deepEqual(targets({ pods, config: config({ available: [], namespaceFeatures: {} }) }), []);
      assert.deepEqual(
        targets({ pods, config: config({ available: [ALL], namespaceFeatures: { apps: [ALL] } }) }),
        ['mirror.example.com/hub/library/nginx:1'],
      );
    });

    test('a Pod without a namespace is in default, read with the default Namespace annotations', () => {
      assert.deepEqual(
        targets({ pods: [pod(undefined, ['nginx:1'])], namespaces: [ns('default', { [IMG]: 'true' })] }),
        ['mirror.example.com/hub/library/nginx:1'],
      );
    });

    test('excluded namespaces are never checked', () => {
      assert.deepEqual(targets({ pods: [pod('apps', ['nginx:1'])], excludedNamespaces: ['apps'] }), []);
    });
  });

  test('the count bound keeps the first targets in sorted order and counts the rest as skipped', () => {
    const pods = [pod('apps', ['ghcr.io/z/c:1', 'ghcr.io/a/b:1', 'nginx:1', 'ghcr.io/m/n:1'])];
    const plan = planPreflight({ pods, namespaces: [], config: config(), maxImages: 2 });
    assert.deepEqual(
      plan.images.map((i) => i.target),
      ['mirror.example.com/ghcr/a/b:1', 'mirror.example.com/ghcr/m/n:1'],
    );
    assert.equal(plan.skipped, 2);
    assert.equal(planPreflight({ pods, namespaces: [], config: config(), maxImages: 0 }).skipped, 4);
    assert.equal(planPreflight({ pods, namespaces: [], config: config(), maxImages: -3 }).images.length, 0);
  });

  test('the default bound is 200 distinct targets', () => {
    const images = Array.from({ length: 250 }, (_, i) => `ghcr.io/org/app${String(i).padStart(3, '0')}:1`);
    const plan = planPreflight({ pods: [pod('apps', images)], namespaces: [], config: config() });
    assert.equal(DEFAULT_PREFLIGHT_MAX_IMAGES, 200);
    assert.equal(plan.images.length, 200);
    assert.equal(plan.skipped, 50);
  });

  test('invalid references are counted once each, not checked, and do not stop the rest', () => {
    const plan = planPreflight({
      pods: [pod('apps', ['UPPER/Case::x', 'nginx:1', '']), pod('apps', ['UPPER/Case::x'])],
      namespaces: [],
      config: config(),
    });
    assert.deepEqual(
      plan.images.map((i) => i.target),
      ['mirror.example.com/hub/library/nginx:1'],
    );
    assert.equal(plan.unparseable, 1);
  });

  test('a rewrite that would exceed the name length is unparseable, not planned', () => {
    const long = `ghcr.io/${'a'.repeat(252)}:1`;
    const plan = planPreflight({ pods: [pod('apps', [long])], namespaces: [], config: config() });
    assert.deepEqual(plan.images, []);
    assert.equal(plan.unparseable, 1);
  });

  test('no overrides: nothing to check', () => {
    assert.deepEqual(
      planPreflight({ pods: [pod('apps', ['nginx:1'])], namespaces: [], config: config({ overrides: {} }) }),
      {
        images: [],
        skipped: 0,
        unparseable: 0,
      },
    );
  });

  test('Pods without a spec or containers without an image are skipped', () => {
    assert.deepEqual(
      targets({
        pods: [
          { metadata: { namespace: 'apps' } },
          { metadata: { namespace: 'apps' }, spec: { containers: [{ name: 'x' }] } },
        ],
      }),
      [],
    );
  });
});

describe('readOriginalImages', () => {
  test('reads container name → image, dropping what is not a non-empty string', () => {
    assert.deepEqual([...readOriginalImages(JSON.stringify({ a: 'x:1', b: 2, c: '' }))], [['a', 'x:1']]);
    assert.equal(readOriginalImages(undefined).size, 0);
    assert.equal(readOriginalImages('not json').size, 0);
    assert.equal(readOriginalImages('null').size, 0);
  });
});
