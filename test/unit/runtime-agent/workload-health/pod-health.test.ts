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
  type PodHealthSettings,
  type TrustBundleSettings,
} from '../../../../src/runtime-agent/workload-health/pod-health.js';
import { originalKey } from '../../../../src/runtime-agent/workload-health/original-key.js';

const SECRET = 'registry-credentials';
/** The trust bundle in force: the default volume name and path. */
const TRUST: TrustBundleSettings = {
  name: 'kyma-ca',
  certWritePath: 'ca.crt',
  volumeName: 'rt-bootstrapper-certs',
  volumeMountPath: '/etc/ssl/certs',
};
const settings: PodHealthSettings = { pullSecretName: SECRET, trustBundle: TRUST };
const UID = '3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
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
  /** Default: our pull Secret where an image was rewritten, as the admission leaves such a Pod. */
  readonly pullSecrets?: string[];
  readonly revision?: string | null;
  /** Our volume, and our mount in every container, as the admission adds them. */
  readonly trustBundle?: TrustBundleSettings;
  readonly uid?: string;
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
  const pullSecrets =
    s.pullSecrets ??
    (typeof rewritten === 'object' && Object.keys(rewritten).length > 0 ? [SECRET] : undefined);
  const tb = s.trustBundle;
  const mounts = () =>
    tb ? { volumeMounts: [{ name: tb.volumeName, mountPath: tb.volumeMountPath, readOnly: true }] } : {};
  return {
    metadata: {
      name: 'p',
      namespace: 'ns',
      ...(s.uid !== undefined ? { uid: s.uid } : {}),
      labels: revision === null ? {} : { [REVISION_LABEL]: revision },
      annotations: {
        ...(revision === null ? {} : { [REVISION_ANNOTATION]: revision }),
        [ORIGINAL_IMAGES_ANNOTATION]: typeof rewritten === 'string' ? rewritten : JSON.stringify(rewritten),
      },
    },
    spec: {
      containers: Object.entries(containers).map(([name, image]) => ({ name, image, ...mounts() })),
      ...(s.init
        ? { initContainers: Object.entries(s.init).map(([name, image]) => ({ name, image, ...mounts() })) }
        : {}),
      ...(pullSecrets ? { imagePullSecrets: pullSecrets.map((name) => ({ name })) } : {}),
      ...(tb
        ? {
            volumes: [
              {
                name: tb.volumeName,
                projected: {
                  sources: [{ clusterTrustBundle: { name: tb.name, path: tb.certWritePath } }],
                  defaultMode: 420,
                },
              },
            ],
          }
        : {}),
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

describe('pod health: a Pod without our pull Secret speaks for itself (DESIGN §14)', () => {
  // A Pod that opted out of add-img-pull-secret still gets the mirror and an honest stamp.
  for (const reason of ['ErrImagePull', 'ImagePullBackOff'])
    test(`a rewritten image in ${reason} counts only where the Pod carries our pull Secret`, () => {
      const optedOut = (pullSecrets: string[]) =>
        pod({ pullSecrets, statuses: { app: { state: waiting(reason, 'unauthorized') } } });
      for (const refs of [[], ['its-own']]) {
        assert.deepEqual(kinds(optedOut(refs), true), [], `pull Secrets ${JSON.stringify(refs)}`);
        assert.deepEqual(kinds(optedOut(refs), false), [], 'nor as our Secret missing: it does not list it');
        const facts = podFactsOf(optedOut(refs), settings, RULES);
        assert.ok(facts);
        assert.deepEqual(facts.failures, []);
        assert.equal(facts.pullWaits, undefined);
      }
      const other = { pullSecretName: 'another-name', trustBundle: TRUST };
      assert.deepEqual(
        podFactsOf(optedOut([SECRET]), other, RULES)?.failures,
        [],
        "a Secret of another name is not the set's",
      );
      assert.deepEqual(kinds(optedOut(['its-own', SECRET])), ['image-pull:app'], 'ours beside its own');
    });

  test('an invalid name our rewrite made counts with or without our pull Secret', () => {
    const p = pod({ pullSecrets: [], statuses: { app: { state: waiting('InvalidImageName') } } });
    assert.deepEqual(kinds(p), ['image-pull:app']);
  });
});

describe('pod health: our mount (DESIGN §14)', () => {
  const dir = (uid = UID, volume = TRUST.volumeName) =>
    `/var/lib/kubelet/pods/${uid}/volumes/kubernetes.io~projected/${volume}`;
  /** What runc says when it cannot mount a volume (containerd passes it on). */
  const runc = (source = dir(), target = TRUST.volumeMountPath) =>
    'failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create ' +
    'failed: unable to start container process: error during container init: error mounting ' +
    `"${source}" to rootfs at "${target}": mount ${source}:${target}, flags: 0x5001: not a directory: unknown`;
  const mounted = (reason: string, message: string, s: PodShape = {}) =>
    pod({
      rewritten: {},
      uid: UID,
      trustBundle: TRUST,
      statuses: { app: { state: waiting(reason, message) } },
      ...s,
    });

  for (const reason of ['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError'])
    test(`${reason} of the runtime mounting our volume is a mount failure`, () => {
      assert.deepEqual(kinds(mounted(reason, runc())), ['mount:app']);
      const init = mounted(reason, runc(), {
        init: { setup: 'quay.io/setup:1' },
        statuses: { app: {} },
        initStatuses: { setup: { state: waiting(reason, runc()) } },
      });
      assert.deepEqual(kinds(init), ['mount:setup'], 'an init container too');
    });

  test('names a tenant picks do not make a mount failure, even where our mount is', () => {
    for (const message of [
      'volume "rt-bootstrapper-certs" not found',
      'configmap "rt-bootstrapper-certs" not found',
      'mount /etc/ssl/certs: read-only file system',
      'container has runAsNonRoot and image will run as root (pod: "rt-bootstrapper-certs_ns(x)", container: app)',
      // The tenant's own volume mounted inside ours.
      runc(`/var/lib/kubelet/pods/${UID}/volumes/kubernetes.io~configmap/extra`, '/etc/ssl/certs/extra'),
      // A volume whose name begins with ours; ours in another Pod.
      runc(dir(UID, 'rt-bootstrapper-certs-2')),
      runc(dir('another-uid')),
    ])
      assert.deepEqual(kinds(mounted('RunContainerError', message)), [], message);
  });

  test('a mount failure counts only where the Pod carries exactly our volume and the container our mount', () => {
    const variants: [string, (p: V1Pod) => void][] = [
      ['no uid', (p) => delete p.metadata!.uid],
      [
        'a volume of our name that is not ours',
        (p) => (p.spec!.volumes = [{ name: TRUST.volumeName, emptyDir: {} }]),
      ],
      [
        'another bundle',
        (p) => (p.spec!.volumes![0]!.projected!.sources![0]!.clusterTrustBundle!.name = 'tenant-ca'),
      ],
      [
        'an optional bundle',
        (p) => (p.spec!.volumes![0]!.projected!.sources![0]!.clusterTrustBundle!.optional = true),
      ],
      ['no mount in the container', (p) => (p.spec!.containers[0]!.volumeMounts = [])],
      ['a mount with a subPath', (p) => (p.spec!.containers[0]!.volumeMounts![0]!.subPath = 'ca.crt')],
      ['a writable mount', (p) => (p.spec!.containers[0]!.volumeMounts![0]!.readOnly = false)],
      [
        'our volume mounted a second time',
        (p) => p.spec!.containers[0]!.volumeMounts!.push({ name: TRUST.volumeName, mountPath: '/proc/x' }),
      ],
      // What it expands can be written after the uid is known (env from a ConfigMap, an annotation).
      ['a command that expands a variable', (p) => (p.spec!.containers[0]!.command = ['$(ENTRY)'])],
      ['args that expand a variable', (p) => (p.spec!.containers[0]!.args = ['--ca=$(CA_PATH)'])],
    ];
    assert.deepEqual(kinds(mounted('RunContainerError', runc())), ['mount:app'], 'as the admission left it');
    for (const [what, change] of variants) {
      const p = mounted('RunContainerError', runc());
      change(p);
      assert.deepEqual(kinds(p), [], what);
    }
    const p = mounted('RunContainerError', runc());
    p.spec!.containers[0]!.args = ['--port=8080'];
    assert.deepEqual(kinds(p), ['mount:app'], 'args without a variable');
    assert.deepEqual(
      classifyPod(p, { pullSecretName: SECRET, pullSecretExists: true }, RULES)?.failures,
      [],
      'no trust bundle in force: nothing of ours is mounted',
    );
  });

  test('a mount failure is judged by the configured volume name and path', () => {
    const custom = { ...TRUST, volumeName: 'my-certs', volumeMountPath: '/certs' };
    const p = mounted('CreateContainerError', runc(dir(UID, 'my-certs'), '/certs'), { trustBundle: custom });
    const failures = (s: PodHealthSettings) =>
      classifyPod(p, { ...s, pullSecretExists: true }, RULES)?.failures.length;
    assert.equal(failures({ pullSecretName: SECRET, trustBundle: custom }), 1);
    assert.equal(failures(settings), 0, 'the default is not ours here');
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
