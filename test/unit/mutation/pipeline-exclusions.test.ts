import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseWebhookConfig, type WebhookConfig } from '../../../src/api/webhook-config.js';
import {
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
} from '../../../src/api/webhook-features.js';
import { ORIGINAL_IMAGES_ANNOTATION } from '../../../src/api/workload-health.js';
import type { MutatePodInput, MutatePodResult } from '../../../src/mutation/pipeline.js';
import type { Pod } from '../../../src/mutation/pod.js';
import { ephemeralUpdate, mutateChecked } from './support.js';

const config = (overrideExclusions?: string[]): WebhookConfig =>
  parseWebhookConfig({
    overrides: { 'replace.me': 'ghcr.io', 'docker.io': 'mirror.io/hub' },
    availableFeatures: [FEATURE_ALL],
    landscape: 'eu10',
    overrideExclusions,
  });
const EXCLUSIONS = ['replace.me/keep', 'nginx:1.25'];

/** Runs mutatePod in namespace `team`, the pull Secret available, through mutateChecked. */
const run = (input: Omit<MutatePodInput, 'namespace' | 'pullSecretAvailable'>): MutatePodResult =>
  mutateChecked({ namespace: { name: 'team' }, pullSecretAvailable: true, ...input });

const ALL_ON = { [FEATURE_ALL]: 'true' };
const pod: Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', annotations: ALL_ON },
  spec: {
    containers: [
      { name: 'kept', image: 'replace.me/keep/app:1' },
      { name: 'moved', image: 'replace.me/app:1' },
      { name: 'pinned', image: 'docker.io/library/nginx:1.25' },
      { name: 'other-tag', image: 'nginx:1.26' },
    ],
    initContainers: [{ name: 'init', image: 'replace.me/keep' }],
  },
};
const imagesOf = (p: Pod): string[] =>
  [
    ...(p.spec?.containers ?? []),
    ...(p.spec?.initContainers ?? []),
    ...(p.spec?.ephemeralContainers ?? []),
  ].map((c) => c.image ?? '');

describe('mutatePod: overrideExclusions', () => {
  test('CREATE: excluded images stay as written, the others are rewritten, every other feature applies', () => {
    const result = run({ pod, operation: 'CREATE', config: config(EXCLUSIONS) });
    assert.deepEqual(imagesOf(result.pod), [
      'replace.me/keep/app:1',
      'ghcr.io/app:1',
      'docker.io/library/nginx:1.25',
      'mirror.io/hub/library/nginx:1.26',
      'replace.me/keep',
    ]);
    assert.ok(result.applied.includes(FEATURE_ALTER_IMG_REGISTRY));
    assert.ok(result.applied.includes(FEATURE_SET_FIPS_MODE));
    assert.ok(!result.warnings.some((w) => w.includes('image')), JSON.stringify(result.warnings));
    // A second pass changes nothing.
    assert.deepEqual(run({ pod: result.pod, operation: 'CREATE', config: config(EXCLUSIONS) }).patch, []);
  });

  test('without the field, or with an empty list, every image is rewritten as before', () => {
    for (const c of [config(), config([])]) {
      const result = run({ pod, operation: 'CREATE', config: c });
      assert.deepEqual(imagesOf(result.pod), [
        'ghcr.io/keep/app:1',
        'ghcr.io/app:1',
        'mirror.io/hub/library/nginx:1.25',
        'mirror.io/hub/library/nginx:1.26',
        'ghcr.io/keep',
      ]);
    }
  });

  test('every image excluded: alter-img-registry changes nothing, the other features still apply', () => {
    const result = run({
      pod,
      operation: 'CREATE',
      config: config(['replace.me/keep', 'replace.me/app', 'nginx']),
    });
    assert.deepEqual(imagesOf(result.pod), imagesOf(pod));
    assert.equal(result.applied.includes(FEATURE_ALTER_IMG_REGISTRY), false);
    assert.ok(result.applied.includes(FEATURE_SET_FIPS_MODE));
  });

  test('under a set, the original images record only what was rewritten', () => {
    const result = run({ pod, operation: 'CREATE', config: config(EXCLUSIONS), revision: 'set-1' });
    assert.deepEqual(JSON.parse(result.pod.metadata?.annotations?.[ORIGINAL_IMAGES_ANNOTATION] ?? '{}'), {
      moved: 'replace.me/app:1',
      'other-tag': 'nginx:1.26',
    });
    // Called again (re-invocation), the stamp is read back as our own: nothing changes.
    assert.deepEqual(
      run({ pod: result.pod, operation: 'CREATE', config: config(EXCLUSIONS), revision: 'set-1' }).patch,
      [],
    );
  });

  test('UPDATE and ephemeral containers: a changed image that is excluded stays', () => {
    const running: Pod = {
      metadata: { name: 'p', annotations: ALL_ON },
      spec: { containers: [{ name: 'a', image: 'ghcr.io/a:1' }] },
    };
    const updated: Pod = { ...running, spec: { containers: [{ name: 'a', image: 'replace.me/keep/a:2' }] } };
    assert.deepEqual(
      run({ pod: updated, oldPod: running, operation: 'UPDATE', config: config(EXCLUSIONS) }).patch,
      [],
    );
    const moved: Pod = { ...running, spec: { containers: [{ name: 'a', image: 'replace.me/a:2' }] } };
    assert.deepEqual(
      imagesOf(run({ pod: moved, oldPod: running, operation: 'UPDATE', config: config(EXCLUSIONS) }).pod),
      ['ghcr.io/a:2'],
    );
    const debug = ephemeralUpdate(running, [
      { name: 'd1', image: 'nginx:1.25' },
      { name: 'd2', image: 'replace.me/debug:1' },
    ]);
    const result = run({ ...debug, config: config(EXCLUSIONS) });
    assert.deepEqual(imagesOf(result.pod), ['ghcr.io/a:1', 'nginx:1.25', 'ghcr.io/debug:1']);
  });

  test('configs sharing one overrides object but not their exclusions each get their own rewrite', () => {
    const excluding = config(EXCLUSIONS);
    const plain: WebhookConfig = { ...excluding, overrideExclusions: undefined };
    const single: Pod = {
      metadata: { name: 'p', annotations: ALL_ON },
      spec: { containers: [{ name: 'a', image: 'replace.me/keep' }] },
    };
    assert.deepEqual(imagesOf(run({ pod: single, operation: 'CREATE', config: excluding }).pod), [
      'replace.me/keep',
    ]);
    assert.deepEqual(imagesOf(run({ pod: single, operation: 'CREATE', config: plain }).pod), [
      'ghcr.io/keep',
    ]);
    assert.deepEqual(imagesOf(run({ pod: single, operation: 'CREATE', config: excluding }).pod), [
      'replace.me/keep',
    ]);
  });
});
