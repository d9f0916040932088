import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FEATURE_ALTER_IMG_REGISTRY, FEATURE_SET_FIPS_MODE } from '../../../src/api/webhook-features.js';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
} from '../../../src/api/workload-health.js';
import type { MutatePodInput, MutatePodResult } from '../../../src/mutation/pipeline.js';
import type { Pod } from '../../../src/mutation/pod.js';
import {
  isLabelValue,
  parseOriginals,
  rewrittenImages,
  stampRevision,
} from '../../../src/mutation/stamp-revision.js';
import { edit, makeConfig, mutateChecked } from './support.js';

const REVISION = '3f9a0c1d2e4b5a69';
const ann = (p: Pod): Record<string, string> => p.metadata?.annotations ?? {};
const lab = (p: Pod): Record<string, string> => p.metadata?.labels ?? {};

/** Runs mutatePod through mutateChecked: a CREATE in `team`, which asks for the registry rewrite, unless `input` says. */
const run = (input: Partial<MutatePodInput> & Pick<MutatePodInput, 'pod'>): MutatePodResult =>
  mutateChecked({
    operation: 'CREATE',
    namespace: { name: 'team', annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true' } },
    config: makeConfig(),
    pullSecretAvailable: true,
    ...input,
  });

const pod = (o: { init?: string; app?: string; sidecar?: string; meta?: Pod['metadata'] } = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: o.meta ?? { name: 'p', namespace: 'team' },
  spec: {
    ...(o.init !== undefined ? { initContainers: [{ name: 'setup', image: o.init }] } : {}),
    containers: [
      { name: 'app', image: o.app ?? 'replace.me/app:1' },
      { name: 'sidecar', image: o.sidecar ?? 'quay.io/side:2' },
    ],
  },
});

describe('the revision stamp on a Pod we change', () => {
  test('a rewritten Pod carries the revision as label and annotation, and the images it asked for', () => {
    const result = run({ pod: pod({ init: 'replace.me/setup:1' }), revision: REVISION });
    assert.equal(lab(result.pod)[REVISION_LABEL], REVISION);
    assert.equal(ann(result.pod)[REVISION_ANNOTATION], REVISION);
    // Only containers whose image changed: the sidecar's registry has no override.
    assert.deepEqual(parseOriginals(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION]), {
      setup: 'replace.me/setup:1',
      app: 'replace.me/app:1',
    });
    assert.equal(result.pod.spec?.containers[0]?.image, 'ghcr.io/app:1');
  });

  test('a Pod changed without an image rewrite carries the revision and no original images', () => {
    const result = run({
      pod: pod({ app: 'quay.io/app:1' }),
      namespace: { name: 'team', annotations: { [FEATURE_SET_FIPS_MODE]: 'true' } },
      revision: REVISION,
    });
    assert.ok(result.patch.length > 0);
    assert.equal(ann(result.pod)[REVISION_ANNOTATION], REVISION);
    assert.equal(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION], undefined);
  });

  test('an unchanged Pod gets no stamp, and no revision known means no stamp', () => {
    const untouched = run({ pod: pod({ app: 'quay.io/app:1' }), revision: REVISION });
    assert.deepEqual(untouched.patch, []);
    const noRevision = run({ pod: pod() });
    assert.ok(noRevision.patch.length > 0);
    assert.equal(lab(noRevision.pod)[REVISION_LABEL], undefined);
    assert.equal(ann(noRevision.pod)[REVISION_ANNOTATION], undefined);
    assert.equal(ann(noRevision.pod)[ORIGINAL_IMAGES_ANNOTATION], undefined);
  });

  test('two Pods of one template under one revision come out byte-identical; mutating again changes nothing', () => {
    const a = run({ pod: pod(), revision: REVISION });
    const b = run({ pod: pod(), revision: REVISION });
    assert.equal(JSON.stringify(a.pod), JSON.stringify(b.pod));
    assert.deepEqual(run({ pod: a.pod, revision: REVISION }).patch, []);
  });

  test('existing labels and annotations are kept beside the stamp', () => {
    const result = run({
      pod: pod({ meta: { name: 'p', labels: { app: 'x' }, annotations: { note: 'keep' } } }),
      revision: REVISION,
    });
    assert.deepEqual(result.pod.metadata?.labels, { app: 'x', [REVISION_LABEL]: REVISION });
    assert.equal(ann(result.pod).note, 'keep');
  });

  test('a revision that cannot be a label value is stamped as annotation only', () => {
    const odd = 'a'.repeat(64);
    const result = run({ pod: pod(), revision: odd });
    assert.equal(lab(result.pod)[REVISION_LABEL], undefined);
    assert.equal(ann(result.pod)[REVISION_ANNOTATION], odd);
  });

  test('an UPDATE that rewrites one image keeps the originals of the others and takes the new revision', () => {
    const created = run({ pod: pod(), revision: 'r1' }).pod;
    const changed: Pod = structuredClone(created);
    const sidecar = changed.spec?.containers[1];
    assert.ok(sidecar);
    sidecar.image = 'replace.me/side:3';
    const result = run({ pod: changed, oldPod: created, operation: 'UPDATE', revision: 'r2' });
    assert.equal(result.pod.spec?.containers[1]?.image, 'ghcr.io/side:3');
    assert.deepEqual(parseOriginals(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION]), {
      app: 'replace.me/app:1',
      sidecar: 'replace.me/side:3',
    });
    assert.equal(ann(result.pod)[REVISION_ANNOTATION], 'r2');
    assert.equal(lab(result.pod)[REVISION_LABEL], 'r2');
  });
});

describe('revision helpers', () => {
  test('label values', () => {
    for (const ok of ['a', 'abc', 'a-b_c.d', '0123456789abcdef', 'a'.repeat(63)])
      assert.ok(isLabelValue(ok), ok);
    for (const bad of ['', '-a', 'a-', 'a/b', 'a b', 'a'.repeat(64)]) assert.ok(!isLabelValue(bad), bad);
  });

  test('original images read back only as an object of strings', () => {
    assert.deepEqual(parseOriginals(undefined), {});
    assert.deepEqual(parseOriginals('not json'), {});
    assert.deepEqual(parseOriginals('["a"]'), {});
    assert.deepEqual(parseOriginals('{"a":"x","b":1}'), { a: 'x' });
  });

  test('original images are read only from a string, never from a value whose text would parse', () => {
    assert.deepEqual(parseOriginals(['{"a":"x"}']), {});
    assert.deepEqual(parseOriginals(7), {});
    assert.deepEqual(parseOriginals({ a: 'x' }), {});
  });
});

// Pods as JSON may lack what the types require (a container's name, a list entry); the stamp
// only reads them, so such Pods are built here as plain JSON.
const asPod = (json: unknown): Pod => json as Pod;
const withContainers = (containers: unknown[]): Pod => asPod({ spec: { containers } });

describe('rewrittenImages', () => {
  test('only named containers with an image before and after, whose image differs, are listed', () => {
    const before = withContainers([
      { name: 'app', image: 'replace.me/app:1' },
      { name: 'same', image: 'quay.io/same:1' },
      { image: 'replace.me/nameless:1' },
      { name: 'had-none' },
      { name: 'lost', image: 'replace.me/lost:1' },
    ]);
    const after = withContainers([
      { name: 'app', image: 'ghcr.io/app:1' },
      { name: 'same', image: 'quay.io/same:1' },
      { image: 'ghcr.io/nameless:1' },
      { name: 'had-none', image: 'ghcr.io/had-none:1' },
      { name: 'lost' },
    ]);
    assert.deepEqual(
      [...rewrittenImages(before, after)],
      [['app', { from: 'replace.me/app:1', to: 'ghcr.io/app:1' }]],
    );
  });

  test('a container with no counterpart in the Pod as requested, or no container at all, is skipped', () => {
    const before = withContainers([
      { name: 'app', image: 'replace.me/app:1' },
      { name: 'b', image: 'b:1' },
    ]);
    const after = withContainers([null, { name: 'b', image: 'ghcr.io/b:1' }, { name: 'new', image: 'n:1' }]);
    assert.deepEqual([...rewrittenImages(before, after)], [['b', { from: 'b:1', to: 'ghcr.io/b:1' }]]);
  });
});

describe('stampRevision on a Pod as the builder left it', () => {
  const ORIGINALS = JSON.stringify({ app: 'replace.me/app:1' });
  const rewrite = (p: Pod, revision: string): ReturnType<typeof edit> =>
    edit(p, (b) => {
      b.set(['spec', 'containers', 0, 'image'], 'ghcr.io/app:1');
      stampRevision(b, p, revision);
    });

  test('a Pod without metadata gets the label, the revision and the original images as a JSON object', () => {
    const { pod: out } = rewrite(
      { spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] } },
      REVISION,
    );
    assert.deepEqual(out.metadata, {
      labels: { [REVISION_LABEL]: REVISION },
      annotations: {
        [REVISION_ANNOTATION]: REVISION,
        [ORIGINAL_IMAGES_ANNOTATION]: '{"app":"replace.me/app:1"}',
      },
    });
  });

  test('a Pod with metadata but no labels or annotations gets them', () => {
    const { pod: out } = rewrite(
      { metadata: { name: 'p' }, spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] } },
      REVISION,
    );
    assert.deepEqual(out.metadata, {
      name: 'p',
      labels: { [REVISION_LABEL]: REVISION },
      annotations: { [REVISION_ANNOTATION]: REVISION, [ORIGINAL_IMAGES_ANNOTATION]: ORIGINALS },
    });
  });

  test('a revision that cannot be a label value, on a Pod without metadata: the annotation alone', () => {
    const odd = 'a'.repeat(64);
    const bare: Pod = { spec: { containers: [{ name: 'app', image: 'quay.io/app:1' }] } };
    const { pod: out } = edit(bare, (b) => {
      stampRevision(b, bare, odd);
    });
    assert.deepEqual(out.metadata, { annotations: { [REVISION_ANNOTATION]: odd } });
  });

  test('a stamp already in place is not written again: the patch holds the image alone', () => {
    const stamped: Pod = {
      metadata: {
        name: 'p',
        labels: { [REVISION_LABEL]: REVISION },
        annotations: { [REVISION_ANNOTATION]: REVISION, [ORIGINAL_IMAGES_ANNOTATION]: ORIGINALS },
      },
      spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] },
    };
    assert.deepEqual(rewrite(stamped, REVISION).patch, [
      { op: 'replace', path: '/spec/containers/0/image', value: 'ghcr.io/app:1' },
    ]);
  });

  test('with no image rewritten, the original images the stored Pod carries stay as they are', () => {
    const carried: Pod = {
      metadata: { name: 'p', annotations: { [ORIGINAL_IMAGES_ANNOTATION]: ORIGINALS } },
      spec: { containers: [{ name: 'app', image: 'ghcr.io/app:1' }] },
    };
    const { pod: out } = edit(carried, (b) => {
      b.set(['metadata', 'labels', 'changed'], 'yes');
      stampRevision(b, carried, 'r2', carried);
    });
    assert.deepEqual(out.metadata?.annotations, {
      [ORIGINAL_IMAGES_ANNOTATION]: ORIGINALS,
      [REVISION_ANNOTATION]: 'r2',
    });
  });
});

describe('revision keys a requester wrote (DESIGN §14)', () => {
  const FORGED = {
    labels: { [REVISION_LABEL]: 'forged' },
    annotations: {
      [REVISION_ANNOTATION]: 'forged',
      [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ app: 'replace.me/private:1' }),
    },
  };
  const forged = (app: string): Pod => pod({ app, meta: { name: 'p', namespace: 'team', ...FORGED } });

  test('a Pod we do not change loses them on CREATE, and nothing else changes', () => {
    const result = run({ pod: forged('quay.io/app:1'), revision: REVISION });
    assert.deepEqual(result.applied, []);
    assert.deepEqual(result.pod.metadata, { name: 'p', namespace: 'team', labels: {}, annotations: {} });
    assert.deepEqual(
      result.patch.map((o) => o.op),
      ['remove', 'remove', 'remove'],
    );
    assert.deepEqual(run({ pod: result.pod, revision: REVISION }).patch, [], 'stable once scrubbed');
  });

  test('a Pod no feature applies to loses them too, with or without a set', () => {
    for (const revision of [REVISION, undefined]) {
      const result = run({ pod: forged('replace.me/app:1'), namespace: { name: 'team' }, revision });
      assert.deepEqual(result.selected, []);
      assert.equal(lab(result.pod)[REVISION_LABEL], undefined);
      assert.equal(ann(result.pod)[REVISION_ANNOTATION], undefined);
      assert.equal(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION], undefined);
    }
  });

  test('a Pod we change gets ours over them: the revision in force and only the images we rewrote', () => {
    const result = run({ pod: forged('replace.me/app:1'), revision: REVISION });
    assert.equal(lab(result.pod)[REVISION_LABEL], REVISION);
    assert.equal(ann(result.pod)[REVISION_ANNOTATION], REVISION);
    assert.deepEqual(parseOriginals(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION]), {
      app: 'replace.me/app:1',
    });
  });

  test('a Pod we change without rewriting an image keeps no forged original images', () => {
    const result = run({
      pod: forged('quay.io/app:1'),
      namespace: { name: 'team', annotations: { [FEATURE_SET_FIPS_MODE]: 'true' } },
      revision: REVISION,
    });
    assert.equal(ann(result.pod)[REVISION_ANNOTATION], REVISION);
    assert.equal(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION], undefined);
    const noSet = run({
      pod: forged('quay.io/app:1'),
      namespace: { name: 'team', annotations: { [FEATURE_SET_FIPS_MODE]: 'true' } },
    });
    assert.equal(lab(noSet.pod)[REVISION_LABEL], undefined);
    assert.equal(ann(noSet.pod)[REVISION_ANNOTATION], undefined);
  });

  test('an UPDATE we do not change puts back what the stored Pod had, and keeps ours', () => {
    const created = run({ pod: pod(), revision: 'r1' }).pod;
    const relabelled: Pod = structuredClone(created);
    const meta = relabelled.metadata ?? {};
    meta.labels = { ...meta.labels, [REVISION_LABEL]: 'forged', app: 'x' };
    meta.annotations = { ...meta.annotations, [ORIGINAL_IMAGES_ANNOTATION]: '{"app":"docker.io/x/y:1"}' };
    const result = run({ pod: relabelled, oldPod: created, operation: 'UPDATE', revision: 'r2' });
    assert.equal(lab(result.pod)[REVISION_LABEL], 'r1');
    assert.equal(lab(result.pod).app, 'x');
    assert.equal(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION], ann(created)[ORIGINAL_IMAGES_ANNOTATION]);
    const untouched = run({ pod: created, oldPod: created, operation: 'UPDATE', revision: 'r2' });
    assert.deepEqual(untouched.patch, [], 'an UPDATE of our own stamp changes nothing');
  });

  test('a CREATE called again carries our own stamp and keeps it; one naming an image we would not run loses it', () => {
    const first = run({ pod: pod(), revision: REVISION }).pod;
    assert.deepEqual(run({ pod: first, revision: REVISION }).patch, []);
    const claimed: Pod = structuredClone(first);
    const annotations = claimed.metadata?.annotations ?? {};
    annotations[ORIGINAL_IMAGES_ANNOTATION] = JSON.stringify({ app: 'docker.io/someone/private:1' });
    const result = run({ pod: claimed, revision: REVISION });
    assert.equal(lab(result.pod)[REVISION_LABEL], undefined);
    assert.equal(ann(result.pod)[REVISION_ANNOTATION], undefined);
    assert.equal(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION], undefined);
    const otherSet = run({ pod: first, revision: 'another' });
    assert.equal(ann(otherSet.pod)[REVISION_ANNOTATION], undefined, 'a stamp of another set is not ours now');
  });

  test('an UPDATE that adds them to a Pod we never stamped loses them', () => {
    const plain = pod({ app: 'quay.io/app:1' });
    const result = run({
      pod: forged('quay.io/app:1'),
      oldPod: plain,
      operation: 'UPDATE',
      revision: REVISION,
    });
    assert.equal(lab(result.pod)[REVISION_LABEL], undefined);
    assert.equal(ann(result.pod)[ORIGINAL_IMAGES_ANNOTATION], undefined);
  });
});
