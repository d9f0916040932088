import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  canonicalJson,
  clusterTrustBundleContentVersion,
  configMapContentVersion,
  secretContentVersion,
  sameCountedSources,
  sourceSetVersion,
} from '../../../src/controller/sources/content-hash.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('content versions', () => {
  test('canonical JSON ignores key order at every depth, keeps array order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, 1], c: 3 } }), '{"a":{"c":3,"d":[2,1]},"b":1}');
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
        const reversed = Object.fromEntries(Object.entries(obj).reverse());
        return canonicalJson(obj) === canonicalJson(reversed);
      }),
    );
  });

  test('a Secret version names type and data only: metadata, key order and resourceVersion do not count', () => {
    const a = secretContentVersion({
      metadata: { name: 's', resourceVersion: '1', labels: { x: 'y' } },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': b64('{"auths":{}}'), extra: b64('1') },
    });
    const b = secretContentVersion({
      metadata: { name: 's', resourceVersion: '99', annotations: { z: 'w' } },
      data: { extra: b64('1'), '.dockerconfigjson': b64('{"auths":{}}') },
      type: 'kubernetes.io/dockerconfigjson',
    });
    assert.equal(a, b);
    assert.match(a, /^[0-9a-f]{16}$/);
    assert.notEqual(secretContentVersion({ type: 'Opaque', data: { extra: b64('2') } }), a);
  });

  test('a Secret type change is a change; no type means Opaque, as the API server defaults it', () => {
    const data = { k: b64('v') };
    assert.notEqual(
      secretContentVersion({ type: 'Opaque', data }),
      secretContentVersion({ type: 'other', data }),
    );
    assert.equal(secretContentVersion({ data }), secretContentVersion({ type: 'Opaque', data }));
  });

  test('the Secret version is not a plain digest of its content (it must not allow guessing)', () => {
    const secret = { type: 'Opaque', data: { password: b64('hunter2') } };
    const version = secretContentVersion(secret);
    const text = canonicalJson(secret);
    for (const plain of [
      createHash('sha256').update(text).digest('hex'),
      createHash('sha1').update(text).digest('hex'),
      createHash('md5').update(text).digest('hex'),
    ]) {
      assert.ok(!plain.startsWith(version));
    }
  });

  test('a ConfigMap version names data and binaryData; absent and empty are the same', () => {
    assert.equal(configMapContentVersion({ data: {} }), configMapContentVersion({}));
    assert.equal(
      configMapContentVersion({ metadata: { name: 'a', labels: { l: '1' } }, data: { a: '1', b: '2' } }),
      configMapContentVersion({ metadata: { name: 'a' }, data: { b: '2', a: '1' } }),
    );
    assert.notEqual(
      configMapContentVersion({ data: { a: '1' } }),
      configMapContentVersion({ data: { a: '2' } }),
    );
    assert.notEqual(
      configMapContentVersion({ data: { a: '1' } }),
      configMapContentVersion({ data: { a: '1' }, binaryData: { b: b64('x') } }),
    );
  });

  test('a ClusterTrustBundle version names its spec', () => {
    const spec = { signerName: 'example.com/s', trustBundle: 'PEM-1' };
    assert.equal(
      clusterTrustBundleContentVersion({ metadata: { name: 'a', resourceVersion: '1' }, spec }),
      clusterTrustBundleContentVersion({
        metadata: { name: 'a', resourceVersion: '2', labels: { x: 'y' } },
        spec,
      }),
    );
    assert.notEqual(
      clusterTrustBundleContentVersion({ spec }),
      clusterTrustBundleContentVersion({ spec: { ...spec, trustBundle: 'PEM-2' } }),
    );
  });

  test('a ClusterTrustBundle read at v1 or at v1beta1 has one version (a KCP upgrade makes no new set)', () => {
    const spec = { signerName: 'example.com/s', trustBundle: 'PEM-1' };
    const at = (apiVersion: string) =>
      clusterTrustBundleContentVersion({
        apiVersion,
        kind: 'ClusterTrustBundle',
        metadata: { name: 'a' },
        spec,
      });
    assert.equal(at('certificates.k8s.io/v1'), at('certificates.k8s.io/v1beta1'));
  });

  test('the set version changes with any source, and a missing source differs from any content', () => {
    const base = { pullSecret: 'a', clusterTrustBundle: 'b', configMap: 'c' };
    const v = sourceSetVersion(base);
    assert.equal(sourceSetVersion({ ...base }), v);
    for (const k of ['pullSecret', 'clusterTrustBundle', 'configMap'] as const) {
      assert.notEqual(sourceSetVersion({ ...base, [k]: 'z' }), v, k);
      assert.notEqual(sourceSetVersion({ ...base, [k]: undefined }), v, `${k} missing`);
    }
    // The position matters: swapping two sources' versions is a different set.
    assert.notEqual(sourceSetVersion({ pullSecret: 'b', clusterTrustBundle: 'a', configMap: 'c' }), v);
  });

  test('the manifests ConfigMap counts only while watched; the base set keeps its version', () => {
    const base = { pullSecret: 'a', clusterTrustBundle: 'b', configMap: 'c' };
    const all = ['pullSecret', 'clusterTrustBundle', 'configMap', 'manifestsConfigMap'] as const;
    // States recorded before the source existed hold this very digest: it must not move.
    const legacy = createHash('sha256').update('source-set\0a,b,c').digest('hex').slice(0, 16);
    assert.equal(sourceSetVersion(base), legacy);
    assert.equal(sourceSetVersion({ ...base, manifestsConfigMap: 'r' }), legacy, 'not watched');
    assert.equal(sourceSetVersion({ ...base, manifestsConfigMap: 'r' }, all.slice(0, 3)), legacy);
    const watched = sourceSetVersion({ ...base, manifestsConfigMap: 'r' }, all);
    assert.notEqual(watched, legacy);
    assert.notEqual(sourceSetVersion({ ...base, manifestsConfigMap: 'r2' }, all), watched, 'a new release');
    assert.notEqual(sourceSetVersion(base, all), watched, 'watched but missing');
    assert.notEqual(sourceSetVersion(base, all), legacy, 'watched but missing is not unwatched');
  });

  test('watched lists count the same sources when they agree on the conditional ones', () => {
    assert.equal(sameCountedSources(['pullSecret', 'configMap'], ['pullSecret', 'clusterTrustBundle']), true);
    assert.equal(sameCountedSources([], ['pullSecret', 'clusterTrustBundle', 'configMap']), true);
    assert.equal(sameCountedSources(['manifestsConfigMap'], []), false);
    assert.equal(sameCountedSources(['configMap', 'manifestsConfigMap'], ['manifestsConfigMap']), true);
  });
});
