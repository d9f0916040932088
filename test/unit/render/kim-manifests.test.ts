import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { planWebhook } from '../../../src/controller/direct/runtime-manifests.js';
import {
  checkKimManifests,
  kimConfigMapYaml,
  KimManifestsError,
  checkReleaseVersion,
  renderKimManifests,
  splitAsKim,
} from '../../../src/render/kim-manifests.js';
import { renderWebhookManifests, webhookManifestList } from '../../../src/render/webhook-manifests.js';
import { trustRestartRules } from '../../../src/render/webhook-rbac.js';

interface Obj {
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
}

const kim = renderKimManifests({ image: 'example.com/rtb:2.0.0', version: '2.0.0', landscape: 'eu10' });

/** What KIM does with the text: `strings.Split(text, "---")`, trim, skip empty, decode each piece. */
function asKimReadsIt(text: string): Obj[] {
  return text
    .split('---')
    .map((d) => d.trim())
    .filter((d) => d !== '')
    .map((d) => parse(d) as Obj);
}

const CLUSTER_SCOPED = [
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'MutatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
];

describe('rtb render kim', () => {
  test('the ConfigMap KIM reads: kcp-system/runtime-bootstrapper-manifests, key manifests.yaml', () => {
    assert.equal(kim.configMap.metadata?.name, 'runtime-bootstrapper-manifests');
    assert.equal(kim.configMap.metadata.namespace, 'kcp-system');
    assert.deepEqual(Object.keys(kim.configMap.data ?? {}), ['manifests.yaml']);
    assert.equal(kim.configMap.data?.['manifests.yaml'], kim.text);
    const other = renderKimManifests({ image: 'x', version: '1', configMapNamespace: 'kcp-test' });
    assert.equal(other.configMap.metadata?.namespace, 'kcp-test');
  });

  test('printed as YAML, the ConfigMap carries the text unchanged', () => {
    const printed = kimConfigMapYaml(kim);
    const back = parse(printed) as { data: Record<string, string> };
    assert.equal(back.data['manifests.yaml'], kim.text);
    assert.match(printed, /manifests\.yaml: \|/, 'a literal block');
  });

  test('cut as KIM cuts it, the text gives back exactly our objects, each with a kind', () => {
    const objects = asKimReadsIt(kim.text);
    const expected = webhookManifestList(
      renderWebhookManifests({
        image: 'example.com/rtb:2.0.0',
        version: '2.0.0',
        landscape: 'eu10',
        // KIM's runtimes get the admission policy from the agent (docs/admission-policy.md).
        admissionPolicyInstall: true,
      }),
    );
    assert.deepEqual(objects, JSON.parse(JSON.stringify(expected)));
    for (const o of objects) assert.ok(o.kind, 'every document has a kind');
    assert.deepEqual(splitAsKim(kim.text).length, objects.length);
  });

  test("the trust-bundle restarter's RBAC reaches KIM's installs", () => {
    const role = asKimReadsIt(kim.text).find((o) => o.kind === 'ClusterRole') as Obj & {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    for (const rule of trustRestartRules())
      assert.ok(
        role.rules.some((r) => JSON.stringify(r) === JSON.stringify(rule)),
        `ClusterRole grants ${JSON.stringify(rule)}`,
      );
  });

  test('no document contains a PEM, a caBundle, a Secret or a drift registration', () => {
    // No caBundle field (the admission policies name the field in their expressions and messages).
    assert.doesNotMatch(kim.text, /BEGIN|caBundle:/);
    const kinds = asKimReadsIt(kim.text).map((o) => o.kind);
    assert.ok(!kinds.includes('Secret'), 'no Secret');
    assert.ok(!kinds.includes('ValidatingWebhookConfiguration'), 'no drift registration');
    assert.doesNotMatch(kim.text, /--drift-/);
  });

  test('every namespaced object names its namespace (KIM would put it into default)', () => {
    for (const o of asKimReadsIt(kim.text)) {
      if (CLUSTER_SCOPED.includes(o.kind ?? '')) continue;
      assert.equal(o.metadata?.namespace, 'kyma-system', `${o.kind ?? ''} ${o.metadata?.name ?? ''}`);
    }
  });

  test('the first Deployment is ours, carries the release, and runs with the landscape', () => {
    const d = asKimReadsIt(kim.text).find((o) => o.kind === 'Deployment');
    assert.equal(d?.metadata?.name, 'rt-bootstrapper-controller-manager');
    assert.equal(d.metadata.labels?.['app.kubernetes.io/version'], '2.0.0');
    const spec = d.spec as { template: { spec: { containers: { args: string[]; image: string }[] } } };
    assert.ok(spec.template.spec.containers[0]?.args.includes('--landscape=eu10'), 'the landscape flag');
    assert.equal(spec.template.spec.containers[0]?.image, 'example.com/rtb:2.0.0');
  });

  test('the Namespace comes first and the registration last', () => {
    const kinds = asKimReadsIt(kim.text).map((o) => o.kind);
    assert.equal(kinds[0], 'Namespace');
    assert.equal(kinds.at(-1), 'MutatingWebhookConfiguration');
  });

  test("direct mode installs KIM's Deployment for the same release, but for who writes the certificate and the status report, and who installs the admission policy", () => {
    const direct = planWebhook(undefined, { image: 'example.com/rtb:2.0.0', version: '2.0.0' }).manifests
      .deployment;
    const viaKim = asKimReadsIt(
      renderKimManifests({ image: 'example.com/rtb:2.0.0', version: '2.0.0' }).text,
    ).find((o) => o.kind === 'Deployment');
    const container = direct.spec?.template.spec?.containers[0];
    const args = container?.args ?? [];
    const directOnly = [
      '--serving-cert-issuer=external',
      '--status-config-map=kyma-system/rt-bootstrapper-webhook-status',
    ];
    assert.ok(container && directOnly.every((a) => args.includes(a)));
    assert.ok(!args.includes('--admission-policy=install'), 'direct mode: the KCP installs the policy');
    // KIM's: the agent installs the policy, where the runtime serves it.
    container.args = [...args.filter((a) => !directOnly.includes(a)), '--admission-policy=install'];
    assert.deepEqual(viaKim, JSON.parse(JSON.stringify(direct)));
  });
});

describe("KIM's rules are checked, each on its own", () => {
  const base = webhookManifestList(renderWebhookManifests({ image: 'x', version: '1' })) as Obj[];
  const docsOf = (objects: readonly object[]): string[] => objects.map((o) => stringify(o).trim());
  const check = (objects: Obj[], version = '1'): void => {
    checkKimManifests(objects, docsOf(objects), version);
  };
  const replace = (kind: string, f: (o: Obj) => Obj): Obj[] => base.map((o) => (o.kind === kind ? f(o) : o));

  test('our own manifests pass', () => {
    check(base);
  });

  test('a PEM anywhere is refused', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const withSecret: Obj[] = [
      ...base,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 's', namespace: 'kyma-system' },
        stringData: { 'ca.crt': pem },
      },
    ];
    assert.throws(() => {
      check(withSecret);
    }, KimManifestsError);
    // A PEM body without its dashes (e.g. folded differently) is still caught.
    const folded = withSecret.map((o) =>
      o.kind === 'Secret' ? { ...o, stringData: { 'ca.crt': 'BEGIN CERTIFICATE MIIB' } } : o,
    );
    assert.throws(() => {
      check(folded);
    }, /Secret s\): contains a PEM block/);
    assert.throws(() => {
      check(replace('Deployment', (o) => ({ ...o, metadata: { ...o.metadata, annotations: { a: '---' } } })));
    }, /contains "---"/);
  });

  test('a namespaced object without its namespace is refused', () => {
    assert.throws(() => {
      check(replace('Service', (o) => ({ ...o, metadata: { name: o.metadata?.name ?? '' } })));
    }, /Service rt-bootstrapper-webhook-service\): metadata.namespace missing/);
  });

  test('a document without kind or name is refused', () => {
    assert.throws(() => {
      check([{ metadata: { name: 'x' } }, ...base]);
    }, /no kind/);
    assert.throws(() => {
      check(replace('Role', (o) => ({ ...o, metadata: { namespace: 'kyma-system' } })));
    }, /no metadata.name/);
  });

  test('another Deployment first, none at all, or another release are refused', () => {
    const other: Obj = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'other', namespace: 'kyma-system' },
    };
    assert.throws(() => {
      check([other, ...base]);
    }, /first Deployment is not rt-bootstrapper-controller-manager/);
    assert.throws(() => {
      check(base.filter((o) => o.kind !== 'Deployment'));
    }, /no Deployment/);
    assert.throws(() => {
      check(base, '2');
    }, /app.kubernetes.io\/version is not "2"/);
  });

  test('a release KIM cannot carry as its version label is refused, naming why', () => {
    for (const v of ['on', 'Off', 'YES', 'n', 'true', 'null'])
      assert.throws(
        () => {
          checkReleaseVersion(v);
        },
        /boolean or null/,
        v,
      );
    assert.throws(() => {
      checkReleaseVersion('1.0.0+abc');
    }, /build metadata/);
    assert.throws(() => {
      checkReleaseVersion('');
    }, /empty/);
    assert.throws(() => {
      checkReleaseVersion('x'.repeat(64));
    }, /63 characters/);
    for (const v of ['.1', '1.', 'a b', 'v1/2'])
      assert.throws(
        () => {
          checkReleaseVersion(v);
        },
        /begins and ends/,
        v,
      );
    for (const v of ['1.0.0', 'v1.2.3-rc.1', 'x'.repeat(63), 'online', '2'])
      assert.doesNotThrow(() => {
        checkReleaseVersion(v);
      }, v);
    assert.throws(() => renderKimManifests({ image: 'i', version: 'on' }), KimManifestsError);
  });

  test("the webhook Pods' PriorityClass, for KIM and for direct mode alike", () => {
    const classOf = (objects: readonly object[]): unknown =>
      (objects as { kind?: string; spec?: { template?: { spec?: { priorityClassName?: string } } } }[]).find(
        (o) => o.kind === 'Deployment',
      )?.spec?.template?.spec?.priorityClassName;
    const withClass = renderKimManifests({ image: 'i', version: '2', priorityClassName: 'rtb-critical' });
    assert.equal(classOf(splitAsKim(withClass.text).map((d) => parse(d) as object)), 'rtb-critical');
    assert.equal(
      classOf(splitAsKim(kim.text).map((d) => parse(d) as object)),
      undefined,
      'none unless asked',
    );
    const direct = planWebhook(undefined, { image: 'i', version: '2', priorityClassName: 'rtb-critical' });
    assert.equal(classOf([direct.manifests.deployment]), 'rtb-critical');
    assert.equal(
      classOf([planWebhook(undefined, { image: 'i', version: '2' }).manifests.deployment]),
      undefined,
    );
  });
});
