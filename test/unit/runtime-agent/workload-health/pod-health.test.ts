import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
} from '../../../../src/api/workload-health.js';
import {
  PULL_SECRET_MISSING_REASON,
  classifyPod,
  containerStarted,
  failuresOf,
  podFactsOf,
  revisionOf,
  rewrittenContainers,
} from '../../../../src/runtime-agent/workload-health/pod-health.js';
import { originalKey } from '../../../../src/runtime-agent/workload-health/original-key.js';

const SECRET = 'registry-credentials';
const settings = { pullSecretName: SECRET };
/** The rules every revision of these tests has: Docker Hub to mirror.example.com, as written. */
const mirror = (image: string): string | undefined =>
  image.startsWith('docker.io/') ? `mirror.example.com/${image.slice('docker.io/'.length)}` : undefined;
const RULES = (revision: string) => (revision === 'unknown' ? undefined : mirror);
const running = { running: { startedAt: new Date('2026-01-01T00:00:00Z') } };
const waiting = (reason: string, message = `${reason} happened`) => ({ waiting: { reason, message } });

interface PodShape {
  readonly containers?: Record<string, string>;
  readonly init?: Record<string, string>;
  readonly rewritten?: Record<string, string> | string;
  readonly statuses?: Record<string, Partial<V1ContainerStatus>>;
  readonly initStatuses?: Record<string, Partial<V1ContainerStatus>>;
  readonly pullSecrets?: string[];
  readonly revision?: string | null;
}

function pod(s: PodShape = {}): V1Pod {
  const containers = s.containers ?? { app: 'mirror.example.com/app:1' };
  const status = (
    m: Record<string, Partial<V1ContainerStatus>> | undefined,
  ): V1ContainerStatus[] | undefined =>
    m === undefined
      ? undefined
      : Object.entries(m).map(([name, st]) => ({
          name,
          image: containers[name] ?? s.init?.[name] ?? '',
          imageID: '',
          ready: false,
          restartCount: 0,
          ...st,
        }));
  const rewritten = s.rewritten ?? { app: 'docker.io/app:1' };
  const revision = s.revision === undefined ? 'v2' : s.revision;
  return {
    metadata: {
      name: 'p',
      namespace: 'ns',
      labels: revision === null ? {} : { [REVISION_LABEL]: revision },
      annotations: {
        ...(revision === null ? {} : { [REVISION_ANNOTATION]: revision }),
        [ORIGINAL_IMAGES_ANNOTATION]: typeof rewritten === 'string' ? rewritten : JSON.stringify(rewritten),
      },
    },
    spec: {
      containers: Object.entries(containers).map(([name, image]) => ({ name, image })),
      ...(s.init ? { initContainers: Object.entries(s.init).map(([name, image]) => ({ name, image })) } : {}),
      ...(s.pullSecrets ? { imagePullSecrets: s.pullSecrets.map((name) => ({ name })) } : {}),
    },
    status: {
      ...(s.statuses ? { containerStatuses: status(s.statuses) } : {}),
      ...(s.initStatuses ? { initContainerStatuses: status(s.initStatuses) } : {}),
    },
  };
}

const health = (p: V1Pod, pullSecretExists = true) =>
  classifyPod(p, { ...settings, pullSecretExists }, RULES);
const kinds = (p: V1Pod, exists = true) => health(p, exists)?.failures.map((f) => `${f.kind}:${f.container}`);

/** A container state: ended with `exitCode` for `reason`, having started at the turn of 2026. */
const ended = (exitCode: number, reason: string) => ({
  terminated: { exitCode, reason, startedAt: new Date('2026-01-01T00:00:00Z') },
});

describe('pod health: revision and rewritten containers', () => {
  test('the revision comes from the label, else the annotation; none: not ours', () => {
    assert.equal(revisionOf(pod()), 'v2');
    const annotated = pod();
    annotated.metadata!.labels = {};
    assert.equal(revisionOf(annotated), 'v2');
    assert.equal(revisionOf(pod({ revision: null })), undefined);
    assert.equal(revisionOf(pod({ revision: '' })), undefined);
    assert.equal(health(pod({ revision: null })), undefined);
    assert.equal(podFactsOf(pod({ revision: null }), settings, RULES), undefined);
  });

  test('the original-images annotation names the rewritten containers; malformed names none', () => {
    assert.deepEqual([...rewrittenContainers(pod({ rewritten: { a: 'x', b: 'y' } }))], ['a', 'b']);
    for (const bad of ['not json', '[1,2]', 'null', '"x"', '7'])
      assert.equal(rewrittenContainers(pod({ rewritten: bad })).size, 0, bad);
    const none = pod();
    none.metadata!.annotations = {};
    assert.equal(rewrittenContainers(none).size, 0);
  });
});

describe('pod health: started', () => {
  test('a container started when running, started, or it ran before (crash loop)', () => {
    const base = { name: 'c', image: 'i', imageID: '', ready: false, restartCount: 0 };
    assert.equal(containerStarted(undefined), false);
    assert.equal(containerStarted({ ...base }), false);
    assert.equal(containerStarted({ ...base, started: true }), true);
    assert.equal(containerStarted({ ...base, state: running }), true);
    assert.equal(containerStarted({ ...base, state: waiting('ContainerCreating') }), false);
    assert.equal(
      containerStarted({
        ...base,
        state: waiting('CrashLoopBackOff'),
        lastState: ended(1, 'Error'),
      }),
      true,
    );
    assert.equal(containerStarted({ ...base, lastState: { running: { startedAt: new Date() } } }), true);
    assert.equal(
      containerStarted({
        ...base,
        state: ended(0, 'Completed'),
      }),
      true,
      'a finished container ran',
    );
    assert.equal(
      containerStarted({
        ...base,
        state: ended(128, 'StartError'),
      }),
      false,
    );
    assert.equal(
      containerStarted({ ...base, state: { terminated: { exitCode: 128, reason: 'ContainerCannotRun' } } }),
      false,
    );
    assert.equal(
      containerStarted({
        ...base,
        state: { terminated: { exitCode: 128, reason: 'Error', startedAt: new Date(0) } },
      }),
      false,
      'the zero time: never started',
    );
    assert.equal(
      containerStarted({
        ...base,
        state: { terminated: { exitCode: 1, startedAt: 'nonsense' as unknown as Date } },
      }),
      false,
    );
    assert.equal(
      containerStarted({
        ...base,
        state: { terminated: { exitCode: 1, startedAt: '2026-01-01T00:00:00Z' as unknown as Date } },
      }),
      true,
      'JSON gives strings',
    );
  });

  test('a Pod started when every container and init container started or ran', () => {
    assert.equal(health(pod())?.started, false, 'no statuses yet');
    assert.equal(health(pod({ statuses: { app: { state: running } } }))?.started, true);
    const two = { containers: { a: 'x', b: 'y' } };
    assert.equal(
      health(pod({ ...two, statuses: { a: { state: running } } }))?.started,
      false,
      'b has no status',
    );
    assert.equal(
      health(pod({ ...two, statuses: { a: { state: running }, b: { state: waiting('ErrImagePull') } } }))
        ?.started,
      false,
    );
    const init = { init: { setup: 'z' } };
    assert.equal(
      health(pod({ ...init, statuses: { app: { state: running } } }))?.started,
      false,
      'init never seen',
    );
    assert.equal(
      health(
        pod({
          ...init,
          statuses: { app: { state: running } },
          initStatuses: {
            setup: {
              state: ended(0, 'Completed'),
            },
          },
        }),
      )?.started,
      true,
    );
    assert.equal(
      health(pod({ ...init, initStatuses: { setup: { state: waiting('ImagePullBackOff') } } }))?.started,
      false,
    );
  });

  test('without a spec (statuses only) the statuses say which containers there are', () => {
    const p = pod({ statuses: { app: { state: running } } });
    delete p.spec;
    assert.equal(health(p)?.started, true);
    const empty = pod();
    delete empty.spec;
    assert.equal(health(empty)?.started, false, 'no containers known: not started');
  });
});

describe('pod health: failures the change can cause', () => {
  for (const reason of ['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName'])
    test(`a rewritten image in ${reason} is an image-pull failure with its registry`, () => {
      const h = health(pod({ statuses: { app: { state: waiting(reason, 'pull failed') } } }));
      assert.deepEqual(h?.failures, [
        {
          kind: 'image-pull',
          container: 'app',
          image: 'mirror.example.com/app:1',
          registry: 'mirror.example.com',
          reason,
          message: 'pull failed',
          original: originalKey('docker.io/app:1'),
        },
      ]);
    });

  test('an image we did not rewrite failing to pull is not ours', () => {
    assert.deepEqual(
      kinds(pod({ rewritten: {}, statuses: { app: { state: waiting('ImagePullBackOff') } } })),
      [],
    );
    assert.deepEqual(
      kinds(
        pod({
          containers: { app: 'mirror.example.com/app:1', side: 'quay.io/side:1' },
          statuses: { app: { state: running }, side: { state: waiting('ErrImagePull') } },
        }),
      ),
      [],
    );
  });

  test('a rewritten init container that does not pull counts too', () => {
    assert.deepEqual(
      kinds(
        pod({
          init: { setup: 'mirror.example.com/setup:1' },
          rewritten: { setup: 'docker.io/setup:1' },
          initStatuses: { setup: { state: waiting('ErrImagePull') } },
        }),
      ),
      ['image-pull:setup'],
    );
  });

  test('a crash loop of a container that started, and other waits, are not ours', () => {
    for (const reason of ['CrashLoopBackOff', 'ContainerCreating', 'PodInitializing', 'ErrImageNeverPull'])
      assert.deepEqual(kinds(pod({ statuses: { app: { state: waiting(reason) } } })), [], reason);
    assert.deepEqual(kinds(pod({ statuses: { app: { state: { terminated: { exitCode: 1 } } } } })), []);
  });

  test('an unparsable image is reported without a registry', () => {
    const h = health(
      pod({
        containers: { app: 'mirror.example.com/Not//Valid' },
        rewritten: { app: 'docker.io/Not//Valid' },
        statuses: { app: { state: waiting('InvalidImageName') } },
      }),
    );
    const f = h?.failures[0];
    assert.ok(f);
    assert.equal(f.image, 'mirror.example.com/Not//Valid');
    assert.equal(f.registry, undefined);
  });

  test('Docker Hub images are read as container runtimes read them', () => {
    const toHub = (image: string): string | undefined =>
      image === 'quay.io/nginx:1' ? 'nginx:1' : undefined;
    const h = classifyPod(
      pod({
        containers: { app: 'nginx:1' },
        rewritten: { app: 'quay.io/nginx:1' },
        statuses: { app: { state: waiting('ErrImagePull') } },
      }),
      { ...settings, pullSecretExists: true },
      () => toHub,
    );
    assert.equal(h?.failures[0]?.registry, 'docker.io');
  });

  test('the image falls back to the status when the spec lacks the container', () => {
    const p = pod({
      statuses: { app: { state: waiting('ErrImagePull'), image: 'mirror.example.com/app:1' } },
    });
    p.spec!.containers = [{ name: 'other' }];
    assert.equal(health(p)?.failures[0]?.image, 'mirror.example.com/app:1');
    p.status!.containerStatuses![0]!.image = '';
    assert.deepEqual(health(p)?.failures, [], 'no image known: the stamp cannot be checked');
  });

  test('our pull Secret missing where the Pod lists it, with a pull error: pull-secret-missing', () => {
    const p = pod({
      rewritten: {},
      pullSecrets: ['other', SECRET],
      statuses: { app: { state: waiting('ErrImagePull', 'unauthorized') } },
    });
    assert.deepEqual(kinds(p, true), [], 'Secret there, image not rewritten: not ours');
    const all = health(p, false)?.failures ?? [];
    assert.equal(all.length, 1);
    const f = all[0];
    assert.ok(f);
    assert.equal(f.kind, 'pull-secret-missing');
    assert.equal(f.reason, PULL_SECRET_MISSING_REASON);
    assert.equal(f.message, 'unauthorized');
    assert.equal(f.registry, 'mirror.example.com');
  });

  test('a missing Secret the Pod does not list, or no pull error, is not ours', () => {
    assert.deepEqual(
      kinds(pod({ rewritten: {}, statuses: { app: { state: waiting('ErrImagePull') } } }), false),
      [],
    );
    assert.deepEqual(
      kinds(
        pod({ rewritten: {}, pullSecrets: ['other'], statuses: { app: { state: waiting('ErrImagePull') } } }),
        false,
      ),
      [],
    );
    assert.deepEqual(kinds(pod({ pullSecrets: [SECRET], statuses: { app: { state: running } } }), false), []);
    assert.deepEqual(
      kinds(
        pod({
          rewritten: {},
          pullSecrets: [SECRET],
          statuses: { app: { state: waiting('InvalidImageName') } },
        }),
        false,
      ),
      [],
      'an invalid name is not about credentials',
    );
  });

  test('a rewritten image waiting on a pull while the Secret is missing counts once, as the Secret', () => {
    const p = pod({
      containers: { app: 'mirror.example.com/app:1', b: 'mirror.example.com/b:1' },
      rewritten: { app: 'docker.io/app:1', b: 'docker.io/b:1' },
      pullSecrets: [SECRET],
      statuses: { app: { state: waiting('ImagePullBackOff') }, b: { state: waiting('InvalidImageName') } },
    });
    assert.deepEqual(kinds(p, true), ['image-pull:app', 'image-pull:b']);
    assert.deepEqual(kinds(p, false), ['pull-secret-missing:app', 'image-pull:b']);
  });

  for (const reason of ['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError'])
    test(`${reason} naming our volume or mount path is a mount failure`, () => {
      const byVolume = pod({
        rewritten: {},
        statuses: { app: { state: waiting(reason, 'volume "rt-bootstrapper-certs" not found') } },
      });
      assert.deepEqual(kinds(byVolume), ['mount:app']);
      const byPath = pod({
        rewritten: {},
        statuses: { app: { state: waiting(reason, 'mount /etc/ssl/certs: read-only file system') } },
      });
      assert.deepEqual(kinds(byPath), ['mount:app']);
      const other = pod({
        rewritten: {},
        statuses: { app: { state: waiting(reason, 'configmap "app" not found') } },
      });
      assert.deepEqual(kinds(other), [], 'another cause');
    });

  test('a mount failure is judged by the configured volume name and path', () => {
    const custom = {
      pullSecretName: SECRET,
      trustBundle: { volumeName: 'my-certs', volumeMountPath: '/certs' },
    };
    const at = (message: string) =>
      classifyPod(
        pod({ rewritten: {}, statuses: { app: { state: waiting('CreateContainerError', message) } } }),
        {
          ...custom,
          pullSecretExists: true,
        },
        RULES,
      )?.failures.length;
    assert.equal(at('volume my-certs missing'), 1);
    assert.equal(at('cannot mount /certs'), 1);
    assert.equal(at('volume rt-bootstrapper-certs missing'), 0, 'the default is not ours here');
    const empty = { pullSecretName: SECRET, trustBundle: { volumeName: '', volumeMountPath: '' } };
    assert.equal(
      classifyPod(
        pod({ rewritten: {}, statuses: { app: { state: waiting('CreateContainerError', 'x') } } }),
        {
          ...empty,
          pullSecretExists: true,
        },
        RULES,
      )?.failures.length,
      0,
      'empty names match nothing',
    );
  });

  test('messages are redacted and cut; fields are cut to the report limits', () => {
    const long = 'x'.repeat(2_000);
    const h = health(
      pod({
        containers: { app: `mirror.example.com/${'a'.repeat(1_500)}:1` },
        rewritten: { app: `docker.io/${'a'.repeat(1_500)}:1` },
        statuses: {
          app: { state: waiting('ErrImagePull', `Get "https://bob:s3cr3t@mirror.example.com/v2/" ${long}`) },
        },
      }),
    );
    const f = h?.failures[0];
    assert.ok(f?.message !== undefined && f.message.length <= 512);
    assert.ok(!f.message.includes('s3cr3t'));
    assert.ok(f.image !== undefined && f.image.length <= 1024);
    const noMessage = pod({ statuses: { app: { state: { waiting: { reason: 'ErrImagePull' } } } } });
    assert.equal(health(noMessage)?.failures[0]?.message, undefined);
  });
});

describe('pod health: facts and the Secret', () => {
  test('facts keep the Secret-dependent part apart, so a Secret that appears clears it', () => {
    const facts = podFactsOf(
      pod({ rewritten: {}, pullSecrets: [SECRET], statuses: { app: { state: waiting('ErrImagePull') } } }),
      settings,
      RULES,
    );
    assert.ok(facts);
    assert.equal(facts.failures.length, 0);
    assert.equal(facts.pullWaits?.length, 1);
    assert.equal(failuresOf(facts, true).length, 0);
    assert.equal(failuresOf(facts, false)[0]?.kind, 'pull-secret-missing');
  });

  test('a healthy Pod has no pullWaits and shares the empty failure list', () => {
    const a = podFactsOf(pod({ statuses: { app: { state: running } } }), settings, RULES);
    const b = podFactsOf(pod({ statuses: { app: { state: running } } }), settings, RULES);
    assert.equal(a?.pullWaits, undefined);
    assert.equal(a?.failures, b?.failures);
    assert.equal(failuresOf(a!, false), a?.failures);
  });
});

describe('pod health: a stamp checked against its set (DESIGN §14)', () => {
  const pulling = { app: { state: waiting('ErrImagePull', 'not found') } };

  test('a revision whose rules are not known counts no failure and no image that ran', () => {
    const facts = podFactsOf(pod({ revision: 'unknown', statuses: pulling }), settings, RULES);
    assert.ok(facts, 'the Pod is still followed');
    assert.deepEqual(facts.failures, []);
    const ran = podFactsOf(
      pod({ revision: 'unknown', statuses: { app: { state: running } } }),
      settings,
      RULES,
    );
    assert.equal(ran?.ran, undefined);
    assert.equal(ran?.started, true);
  });

  test('a pull failure counts only if the image is what the rules make of the original named', () => {
    assert.deepEqual(kinds(pod({ statuses: pulling })), ['image-pull:app']);
    // The creator named an original our rules would send elsewhere: not ours.
    assert.deepEqual(kinds(pod({ rewritten: { app: 'docker.io/private:1' }, statuses: pulling })), []);
    // An original no rule moves at all: we never rewrote it.
    assert.deepEqual(kinds(pod({ rewritten: { app: 'quay.io/app:1' }, statuses: pulling })), []);
    assert.deepEqual(
      kinds(pod({ containers: { app: 'docker.io/someone/private:1' }, statuses: pulling })),
      [],
      'an image that cannot pull, named as if we had rewritten it',
    );
  });

  test('a mount or Secret failure of a container whose stamp does not hold is not counted either', () => {
    const forged = pod({
      rewritten: { app: 'docker.io/private:1' },
      pullSecrets: [SECRET],
      statuses: { app: { state: waiting('CreateContainerError', 'volume rt-bootstrapper-certs missing') } },
    });
    assert.deepEqual(kinds(forged, false), []);
  });

  test('failures carry the key of their original; containers that started are listed by theirs', () => {
    const failed = podFactsOf(pod({ statuses: pulling }), settings, RULES);
    assert.equal(failed?.failures[0]?.original, originalKey('docker.io/app:1'));
    const two = podFactsOf(
      pod({
        containers: { app: 'mirror.example.com/app:1', side: 'quay.io/side:1' },
        statuses: { app: { state: running }, side: { state: running } },
      }),
      settings,
      RULES,
    );
    assert.deepEqual(
      new Set(two?.ran),
      new Set([originalKey('docker.io/app:1'), originalKey('quay.io/side:1')]),
    );
    const mismatched = podFactsOf(
      pod({ rewritten: { app: 'docker.io/other:1' }, statuses: { app: { state: running } } }),
      settings,
      RULES,
    );
    assert.equal(mismatched?.ran, undefined, 'an image that ran is not the original the stamp names');
  });
});
