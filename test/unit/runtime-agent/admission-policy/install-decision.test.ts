import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FIELD_MANAGER } from '../../../../src/api/runtime-names.js';
import { ADMISSION_POLICY_API } from '../../../../src/api/admission-path-report.js';
import { servedApi } from '../../../../src/kube/served-api.js';
import { MAX_POLICY_OVERRIDES } from '../../../../src/render/admission-policy-params.js';
import { ADMISSION_POLICY_NAME } from '../../../../src/render/admission-policy.js';
import {
  ADMISSION_POLICY_HASH_ANNOTATION,
  decideInstall,
  type FoundObject,
  type FoundObjects,
  type InstallInput,
  type LoadedState,
  type Manifest,
} from '../../../../src/runtime-agent/admission-policy/install-decision.js';
import { ADMISSION_POLICY_FIELD_MANAGER } from '../../../../src/api/admission-path-report.js';
import { makeConfig, seedTrustBundle } from '../../mutation/support.js';

const HASH = 'a'.repeat(64);
const v1 = servedApi(ADMISSION_POLICY_API, 'v1');
const v1beta1 = servedApi(ADMISSION_POLICY_API, 'v1beta1');
const NONE: FoundObjects = { params: undefined, policy: undefined, binding: undefined };
const loaded = (patch: Partial<LoadedState> = {}): LoadedState => ({
  config: makeConfig(),
  revision: 'set-1',
  trustBundle: { name: seedTrustBundle.name, hash: HASH },
  trustBundleMount: true,
  namespace: 'kyma-system',
  ...patch,
});
const input = (patch: Partial<InstallInput> = {}): InstallInput => ({
  api: v1,
  installsHere: true,
  found: NONE,
  loaded: loaded(),
  ...patch,
});
const kinds = (apply: readonly Manifest[]): unknown[] => apply.map((m) => m.kind);
const hashOf = (m: Manifest | undefined): string | undefined =>
  (m?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations?.[
    ADMISSION_POLICY_HASH_ANNOTATION
  ];
/** What the runtime holds after the agent applied `apply`. */
const holding = (apply: readonly Manifest[], managers = [ADMISSION_POLICY_FIELD_MANAGER]): FoundObjects => {
  const of = (kind: string): FoundObject | undefined => {
    const m = apply.find((a) => a.kind === kind);
    return m === undefined ? undefined : { managers, hash: hashOf(m) };
  };
  return {
    params: of('ConfigMap'),
    policy: of('MutatingAdmissionPolicy'),
    binding: of('MutatingAdmissionPolicyBinding'),
  };
};
const data = (apply: readonly Manifest[]): Record<string, string> =>
  (apply.find((m) => m.kind === 'ConfigMap')?.data ?? {}) as Record<string, string>;

describe('the runtime agent installs the admission policy (the decision)', () => {
  test('on a runtime serving v1, with nothing installed: parameters, policy and binding, in that order, at v1', () => {
    const d = decideInstall(input());
    assert.deepEqual(kinds(d.apply), [
      'ConfigMap',
      'MutatingAdmissionPolicy',
      'MutatingAdmissionPolicyBinding',
    ]);
    assert.deepEqual(
      d.apply.slice(1).map((m) => m.apiVersion),
      ['admissionregistration.k8s.io/v1', 'admissionregistration.k8s.io/v1'],
    );
    for (const m of d.apply) assert.equal((m.metadata as { name: string }).name, ADMISSION_POLICY_NAME);
    assert.deepEqual(d.report, {
      path: 'policy',
      api: 'admissionregistration.k8s.io/v1',
      installer: 'agent',
    });
  });

  test('v1beta1 where only it is served', () => {
    const d = decideInstall(input({ api: v1beta1 }));
    assert.equal(d.apply[1]?.apiVersion, 'admissionregistration.k8s.io/v1beta1');
    assert.equal(d.report.api, 'admissionregistration.k8s.io/v1beta1');
  });

  test('nothing where no version is served: the webhook alone, and why', () => {
    const d = decideInstall(input({ api: { served: false, found: 'discovery found: nothing' } }));
    assert.deepEqual(d.apply, []);
    assert.deepEqual(d.report, {
      path: 'webhook',
      api: 'none',
      installer: 'none',
      reason: 'discovery found: nothing',
    });
  });

  test('rendered from what the webhook loaded: the revision, the bundle hash, the namespace', () => {
    const d = decideInstall(input({ loaded: loaded({ namespace: 'rtb' }) }));
    assert.equal(data(d.apply).revision, 'set-1');
    assert.equal(data(d.apply).trustBundleHash, HASH);
    assert.equal(data(d.apply).trustBundleName, seedTrustBundle.name);
    assert.equal((d.apply[0]?.metadata as { namespace: string }).namespace, 'rtb');
    const binding = d.apply[2] as { spec: { paramRef: { namespace: string } } };
    assert.equal(binding.spec.paramRef.namespace, 'rtb');
  });

  test('the trust bundle is mounted only where the webhook found the projection kept', () => {
    assert.equal(data(decideInstall(input()).apply).trustBundleName, seedTrustBundle.name);
    const d = decideInstall(input({ loaded: loaded({ trustBundleMount: false }) }));
    assert.equal(data(d.apply).trustBundleName, undefined);
    assert.equal(data(d.apply).trustBundleHash, undefined);
  });

  test('only what changed is applied again: nothing when the content is the same, the parameters after a config change', () => {
    const first = decideInstall(input());
    assert.deepEqual(decideInstall(input({ found: holding(first.apply) })).apply, []);
    const changed = decideInstall(
      input({
        found: holding(first.apply),
        loaded: loaded({ config: makeConfig({ overrides: { 'replace.me': 'other.io' } }) }),
      }),
    );
    assert.deepEqual(kinds(changed.apply), ['ConfigMap']);
    const revised = decideInstall(
      input({ found: holding(first.apply), loaded: loaded({ revision: 'set-2' }) }),
    );
    assert.deepEqual(kinds(revised.apply), ['ConfigMap']);
    // A runtime upgraded from v1beta1 to v1: the policy and binding are written at v1.
    const upgraded = decideInstall(input({ found: holding(decideInstall(input({ api: v1beta1 })).apply) }));
    assert.deepEqual(kinds(upgraded.apply), ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding']);
  });

  test('an object changed by someone else (our hash gone) is applied again', () => {
    const first = decideInstall(input());
    const found = holding(first.apply);
    const d = decideInstall(
      input({ found: { ...found, policy: { managers: ['kubectl'], hash: undefined } } }),
    );
    assert.deepEqual(kinds(d.apply), ['MutatingAdmissionPolicy']);
  });

  test('where the KCP installs (direct mode), nothing is written; the path is what the runtime holds', () => {
    const kcp = holding(decideInstall(input()).apply, [FIELD_MANAGER]);
    const told = decideInstall(input({ installsHere: false, found: kcp }));
    assert.deepEqual(told.apply, []);
    assert.deepEqual(told.report, {
      path: 'policy',
      api: 'admissionregistration.k8s.io/v1',
      installer: 'kcp',
      reason: undefined,
    });
    const notYet = decideInstall(input({ installsHere: false }));
    assert.deepEqual(notYet.apply, []);
    assert.equal(notYet.report.path, 'webhook');
    assert.equal(notYet.report.installer, 'kcp');
  });

  test('objects the KCP wrote are left to it even where the agent would install', () => {
    const first = decideInstall(input());
    for (const kind of ['params', 'policy', 'binding'] as const) {
      const found = {
        ...holding(first.apply),
        [kind]: { managers: [FIELD_MANAGER, 'other'], hash: undefined },
      };
      const d = decideInstall(input({ found, loaded: loaded({ revision: 'set-9' }) }));
      assert.deepEqual(d.apply, [], kind);
      assert.equal(d.report.installer, 'kcp', kind);
    }
  });

  test('a config the policy cannot carry: empty parameters (the webhook alone admits), and why', () => {
    const overrides = Object.fromEntries(
      Array.from({ length: MAX_POLICY_OVERRIDES + 1 }, (_, i) => [`r${i}.example`, 'ghcr.io']),
    );
    const d = decideInstall(input({ loaded: loaded({ config: makeConfig({ overrides }) }) }));
    assert.deepEqual(kinds(d.apply), [
      'ConfigMap',
      'MutatingAdmissionPolicy',
      'MutatingAdmissionPolicyBinding',
    ]);
    assert.deepEqual(data(d.apply), {});
    assert.equal(d.report.path, 'webhook');
    assert.match(d.report.reason ?? '', /overrides/);
  });

  test('nothing before the webhook loaded a config', () => {
    const d = decideInstall(input({ loaded: loaded({ config: undefined }) }));
    assert.deepEqual(d.apply, []);
    assert.equal(d.report.path, 'webhook');
  });
});
