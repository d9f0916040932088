import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KubeApiError, isResourceNotServed } from '../../../src/kube/kube-errors.js';
import { ApiDiscoveryError, discoverApi, type DiscoveryGet } from '../../../src/kube/api-discovery.js';
import {
  nextDiscoveryStep,
  resourceNames,
  type DiscoveryAnswers,
  type GroupVersionAnswer,
} from '../../../src/kube/served-api.js';
import {
  atTrustBundleApi,
  servedTrustBundleApi,
  TRUST_BUNDLE_API,
  TRUST_BUNDLE_VERSIONS,
  type TrustBundleApi,
  type TrustBundleVersion,
} from '../../../src/kube/trust-bundle-api.js';
import { TrustBundleApiNotServedError, TrustBundleApis } from '../../../src/kube/trust-bundle-discovery.js';

const CTB = 'clustertrustbundles';
const CSR = 'certificatesigningrequests';
/** Every answer a group version can give that matters: absent, without the resource, with it. */
const ANSWERS: readonly GroupVersionAnswer[] = ['absent', [], [CSR, `${CSR}/status`], [CTB], [CSR, CTB]];

const serves = (a: GroupVersionAnswer | undefined): boolean =>
  a !== undefined && a !== 'absent' && a.includes(CTB);

/** Runs the steps against fixed answers, counting reads. */
function decide(answers: Readonly<Record<TrustBundleVersion, GroupVersionAnswer>>): {
  api: TrustBundleApi;
  reads: TrustBundleVersion[];
} {
  const seen = new Map<TrustBundleVersion, GroupVersionAnswer>();
  const reads: TrustBundleVersion[] = [];
  for (;;) {
    const step = nextDiscoveryStep(TRUST_BUNDLE_API, seen);
    if ('done' in step) return { api: step.done, reads };
    assert.equal(step.path, `/apis/certificates.k8s.io/${step.read}`);
    reads.push(step.read);
    seen.set(step.read, answers[step.read]);
  }
}

describe('choosing the ClusterTrustBundle API from discovery', () => {
  test('every combination: v1 where served, else v1beta1, else none; v1 is asked first and alone when it serves', () => {
    for (const v1 of ANSWERS)
      for (const v1beta1 of ANSWERS) {
        const { api, reads } = decide({ v1, v1beta1 });
        const label = JSON.stringify({ v1, v1beta1 });
        if (serves(v1)) {
          assert.deepEqual(api, servedTrustBundleApi('v1'), label);
          assert.deepEqual(reads, ['v1'], label);
        } else if (serves(v1beta1)) {
          assert.deepEqual(api, servedTrustBundleApi('v1beta1'), label);
          assert.deepEqual(reads, ['v1', 'v1beta1'], label);
        } else {
          assert.equal(api.served, false, label);
          assert.deepEqual(reads, ['v1', 'v1beta1'], label);
        }
      }
  });

  test('what "none" says: each version and what it served', () => {
    const { api } = decide({ v1: [CSR, `${CSR}/status`], v1beta1: 'absent' });
    assert.ok(!api.served);
    assert.equal(
      api.found,
      'discovery found: certificates.k8s.io/v1 serves certificatesigningrequests but not clustertrustbundles; certificates.k8s.io/v1beta1 is not served',
    );
    const empty = decide({ v1: 'absent', v1beta1: [] }).api;
    assert.ok(!empty.served);
    assert.match(empty.found, /v1 is not served; certificates\.k8s\.io\/v1beta1 serves no resources/);
  });

  test('a served API carries its apiVersion and collection path', () => {
    assert.deepEqual(servedTrustBundleApi('v1beta1'), {
      served: true,
      version: 'v1beta1',
      apiVersion: 'certificates.k8s.io/v1beta1',
      path: '/apis/certificates.k8s.io/v1beta1/clustertrustbundles',
    });
    assert.deepEqual(TRUST_BUNDLE_VERSIONS, ['v1', 'v1beta1']);
  });

  test('an answer already given is never asked again', () => {
    const answers: DiscoveryAnswers<TrustBundleVersion> = new Map([['v1', [CSR]]]);
    const step = nextDiscoveryStep(TRUST_BUNDLE_API, answers);
    assert.ok('read' in step && step.read === 'v1beta1');
  });

  test('resource names from an APIResourceList, anything malformed as none', () => {
    assert.deepEqual(resourceNames({ resources: [{ name: CTB }, { name: 3 }, null, { kind: 'x' }] }), [CTB]);
    for (const bad of [undefined, null, 'x', {}, { resources: 'x' }])
      assert.deepEqual(resourceNames(bad), []);
  });

  test("an object written to a runtime carries the runtime's version; other kinds stay as they are", () => {
    const ctb = { apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', metadata: { name: 'a' } };
    assert.equal(
      atTrustBundleApi(ctb, servedTrustBundleApi('v1beta1')).apiVersion,
      'certificates.k8s.io/v1beta1',
    );
    assert.equal(atTrustBundleApi(ctb, servedTrustBundleApi('v1')), ctb);
    const secret = { apiVersion: 'v1', kind: 'Secret' };
    assert.equal(atTrustBundleApi(secret, servedTrustBundleApi('v1beta1')), secret);
  });

  test('a 404 for an unserved resource is told from a missing object', () => {
    assert.ok(
      isResourceNotServed(new KubeApiError('GET x: HTTP 404: 404 page not found', { statusCode: 404 })),
    );
    assert.ok(
      isResourceNotServed(
        KubeApiError.fromStatus({ kind: 'Status', code: 404, reason: 'NotFound', details: {} }, 404),
      ),
    );
    assert.ok(
      !isResourceNotServed(
        KubeApiError.fromStatus(
          { kind: 'Status', code: 404, reason: 'NotFound', details: { name: 'a', kind: CTB } },
          404,
        ),
      ),
    );
    assert.ok(!isResourceNotServed(new KubeApiError('forbidden', { statusCode: 403 })));
  });
});

/** A discovery GET answering from a table (a missing path: 404), counting calls. */
function scripted(table: Record<string, unknown>): DiscoveryGet & { calls: string[] } {
  const calls: string[] = [];
  const get = (path: string): Promise<unknown> => {
    calls.push(path);
    return path in table
      ? Promise.resolve(table[path])
      : Promise.reject(new KubeApiError('404 page not found', { statusCode: 404 }));
  };
  return Object.assign(get, { calls });
}

const list = (...names: string[]) => ({
  kind: 'APIResourceList',
  resources: names.map((name) => ({ name })),
});
const K134 = { '/apis/certificates.k8s.io/v1': list(CSR), '/apis/certificates.k8s.io/v1beta1': list(CTB) };
const K137 = { '/apis/certificates.k8s.io/v1': list(CSR, CTB) };

describe('discovering and remembering the API per client', () => {
  const access = () => ({
    getCurrentCluster: () => ({ server: 'https://x' }),
    applyToHTTPSOptions: async () => {},
  });

  test('1.37: one read; 1.34 with v1beta1: two; a failure other than 404 is a discovery error', async () => {
    const g137 = scripted(K137);
    assert.deepEqual(await discoverApi(TRUST_BUNDLE_API, g137), servedTrustBundleApi('v1'));
    assert.equal(g137.calls.length, 1);
    const g134 = scripted(K134);
    assert.deepEqual(await discoverApi(TRUST_BUNDLE_API, g134), servedTrustBundleApi('v1beta1'));
    assert.equal(g134.calls.length, 2);
    const refused: DiscoveryGet = () => Promise.reject(new KubeApiError('forbidden', { statusCode: 403 }));
    await assert.rejects(discoverApi(TRUST_BUNDLE_API, refused), ApiDiscoveryError);
  });

  test('one discovery per client while the answer holds; callers at once share it; another client asks anew', async () => {
    let t = 0;
    const apis = new TrustBundleApis({ servedMaxAgeMs: 1_000, now: () => t });
    const a = access();
    const get = scripted(K134);
    const [x, y] = await Promise.all([apis.get(a, get), apis.get(a, get)]);
    assert.deepEqual(x, y);
    await apis.get(a, get);
    assert.equal(get.calls.length, 2, 'v1 and v1beta1, once');
    await apis.get(access(), get);
    assert.equal(get.calls.length, 4);
    t = 1_000;
    await apis.get(a, get);
    assert.equal(get.calls.length, 6, 'asked again once the answer is old');
  });

  test('a failed discovery is not remembered', async () => {
    const apis = new TrustBundleApis();
    const a = access();
    let fail = true;
    const get: DiscoveryGet = (path) =>
      fail ? Promise.reject(new KubeApiError('boom', { statusCode: 500 })) : scripted(K137)(path);
    await assert.rejects(apis.get(a, get), ApiDiscoveryError);
    fail = false;
    assert.deepEqual(await apis.get(a, get), servedTrustBundleApi('v1'));
  });

  test('a call meeting a 404 for the resource (an upgrade) discovers again and runs once more', async () => {
    const apis = new TrustBundleApis();
    const a = access();
    let table: Record<string, unknown> = K134;
    const get: DiscoveryGet = (path) => scripted(table)(path);
    assert.equal((await apis.get(a, get)).served, true);
    table = K137; // the API server was upgraded: v1beta1 is off
    const used: string[] = [];
    const result = await apis.atServed(
      a,
      (api) => {
        used.push(api.apiVersion);
        return api.version === 'v1beta1'
          ? Promise.reject(new KubeApiError('404 page not found', { statusCode: 404 }))
          : Promise.resolve('written');
      },
      get,
    );
    assert.equal(result, 'written');
    assert.deepEqual(used, ['certificates.k8s.io/v1beta1', 'certificates.k8s.io/v1']);
    // A missing object is not an unserved resource: no discovery, the error stands.
    await assert.rejects(
      apis.atServed(
        a,
        () =>
          Promise.reject(KubeApiError.fromStatus({ kind: 'Status', code: 404, details: { name: 'x' } }, 404)),
        get,
      ),
      /Kubernetes API error 404/,
    );
  });

  test('a hint (the version last written at) stands in for discovery; an upgrade that took it away discovers', async () => {
    const apis = new TrustBundleApis();
    const a = access();
    const get = scripted(K137);
    const hint = servedTrustBundleApi('v1beta1');
    assert.deepEqual(await apis.get(a, get, hint), hint);
    assert.equal(get.calls.length, 0, 'no discovery');
    const used: string[] = [];
    await apis.atServed(
      a,
      (api) => {
        used.push(api.version);
        return api.version === 'v1beta1'
          ? Promise.reject(new KubeApiError('404 page not found', { statusCode: 404 }))
          : Promise.resolve();
      },
      get,
    );
    assert.deepEqual(used, ['v1beta1', 'v1']);
    // Known now: a hint no longer counts.
    assert.deepEqual(await apis.get(a, get, hint), servedTrustBundleApi('v1'));
  });

  test('none served: atServed rejects with a typed error naming what was found', async () => {
    const apis = new TrustBundleApis();
    const get = scripted({ '/apis/certificates.k8s.io/v1': list(CSR) });
    await assert.rejects(
      apis.atServed(access(), () => Promise.resolve(1), get),
      (error: unknown) =>
        error instanceof TrustBundleApiNotServedError && /v1beta1 is not served/.test(error.found),
    );
  });
});
