import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL } from '../../../../src/api/trust-stamp.js';
import { KubeApiError } from '../../../../src/kube/kube-errors.js';
import type { ListOptions, ListResult, ListerWatcher } from '../../../../src/kube/lister-watcher.js';
import {
  labelUpstreamPods,
  stampedUpstream,
  UNLABELLED,
  type ScannedPod,
} from '../../../../src/runtime-agent/trust-restart/upstream-pods.js';

const BUNDLE = 'rt-bootstrapper-k3d.test:ctb:1';

const pod = (
  name: string,
  o: { hash?: boolean; label?: boolean; bundle?: string | undefined } = {},
): ScannedPod => ({
  metadata: {
    name,
    namespace: 'team',
    ...(o.label ? { labels: { [CTB_MOUNTED_LABEL]: 'true' } } : {}),
    ...(o.hash !== false ? { annotations: { [CTB_HASH_ANNOTATION]: 'h' } } : {}),
  },
  spec: {
    volumes: [
      { projected: { sources: [{}] } },
      ...(o.bundle !== undefined
        ? [{ projected: { sources: [{ clusterTrustBundle: { name: o.bundle } }] } }]
        : []),
    ],
  },
});

/** Pages of `size` over `pods`; the token named in `expire` is refused once with 410. */
class Pages implements ListerWatcher<ScannedPod> {
  readonly asked: ListOptions[] = [];
  constructor(
    private readonly pods: ScannedPod[],
    private expire: string | undefined,
  ) {}
  list(opts: ListOptions): Promise<ListResult<ScannedPod>> {
    this.asked.push(opts);
    if (opts.continue !== undefined && opts.continue === this.expire) {
      this.expire = undefined;
      return Promise.reject(new KubeApiError('expired', { statusCode: 410, reason: 'Expired' }));
    }
    const from = Number(opts.continue ?? '0');
    const to = from + (opts.limit ?? this.pods.length);
    return Promise.resolve({
      items: this.pods.slice(from, to),
      resourceVersion: '1',
      ...(to < this.pods.length ? { continue: String(to) } : {}),
    });
  }
  watch(): Promise<void> {
    return Promise.resolve();
  }
}

describe('Pods an upstream install stamped', () => {
  test('the stamp and a projected volume of the bundle in force, without our label', () => {
    assert.equal(stampedUpstream(pod('a', { bundle: BUNDLE }), BUNDLE), true);
    assert.equal(stampedUpstream(pod('b', { bundle: BUNDLE, label: true }), BUNDLE), false, 'ours already');
    assert.equal(stampedUpstream(pod('c', { bundle: BUNDLE, hash: false }), BUNDLE), false, 'not stamped');
    assert.equal(stampedUpstream(pod('d'), BUNDLE), false, 'a copied annotation without the mount');
    assert.equal(stampedUpstream(pod('e', { bundle: 'other' }), BUNDLE), false, 'another bundle');
  });

  test('a paged scan of unlabelled Pods labels the upstream-stamped ones; an expired token starts over', async () => {
    const pods = [
      pod('u-1', { bundle: BUNDLE }),
      pod('plain-1', { hash: false }),
      pod('u-2', { bundle: BUNDLE }),
      pod('copied', {}),
      pod('u-3', { bundle: BUNDLE }),
    ];
    const lw = new Pages(pods, '4');
    const labelled: string[] = [];
    const n = await labelUpstreamPods(
      {
        pods: lw,
        bundleName: BUNDLE,
        label: (ns, name) => {
          labelled.push(`${ns}/${name}`);
          return Promise.resolve();
        },
        pageSize: 2,
        pageBytes: Infinity,
      },
      new AbortController().signal,
    );
    assert.ok(lw.asked.every((o) => o.labelSelector === UNLABELLED && o.limit === 2));
    assert.deepEqual(
      lw.asked.map((o) => o.continue),
      [undefined, '2', '4', undefined, '2', '4'],
    );
    // Labelled twice over because this fake keeps listing them; the API server would not.
    assert.deepEqual(labelled, ['team/u-1', 'team/u-2', 'team/u-1', 'team/u-2', 'team/u-3']);
    assert.equal(n, 5);
  });
});
