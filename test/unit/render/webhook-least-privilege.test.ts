import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WEBHOOK_TLS_SECRET } from '../../../src/api/runtime-names.js';
import { planRuntime, removalOrder } from '../../../src/controller/direct/runtime-manifests.js';
import { buildSyncSet } from '../../../src/controller/direct/sync-set.js';
import { renderKimManifests, splitAsKim } from '../../../src/render/kim-manifests.js';
import { renderWebhookManifests, webhookManifestList } from '../../../src/render/webhook-manifests.js';
import { WEBHOOK_REGISTRATION_POLICY } from '../../../src/render/webhook-registration-policy.js';
import { WEBHOOK_ADMISSION_POLICY_POLICY } from '../../../src/render/webhook-admission-policy-rights.js';
import { attestationClusterRules } from '../../../src/render/webhook-rbac.js';
import { WEBHOOK_SECRET_POLICY } from '../../../src/render/webhook-secret-policy.js';
import { WEBHOOK_WRITE_POLICY } from '../../../src/render/webhook-write-policy.js';
import { syncSources } from '../../support/fixtures.js';

const NAMES = [
  WEBHOOK_WRITE_POLICY,
  WEBHOOK_SECRET_POLICY,
  WEBHOOK_REGISTRATION_POLICY,
  WEBHOOK_ADMISSION_POLICY_POLICY,
];
const named = (objects: readonly object[], kind: string): string[] =>
  objects
    .map((o) => o as { kind?: string; metadata?: { name?: string } })
    .filter((o) => o.kind === kind)
    .map((o) => o.metadata?.name ?? '');

describe("the webhook ServiceAccount's Secret and registration policies (rendering)", () => {
  const m = renderWebhookManifests({ image: 'example.com/rtb:1.2.3', version: '1.2.3' });

  test('each bound with Deny under its own name, failing closed, matched to the ServiceAccount alone', () => {
    for (const [pair, name] of [
      [m.secretPolicy, WEBHOOK_SECRET_POLICY],
      [m.registrationPolicy, WEBHOOK_REGISTRATION_POLICY],
    ] as const) {
      assert.equal(pair.policy.metadata?.name, name);
      assert.equal(pair.binding.metadata?.name, name);
      assert.equal(pair.binding.spec?.policyName, name);
      assert.deepEqual(pair.binding.spec.validationActions, ['Deny']);
      assert.equal(pair.policy.spec?.failurePolicy, 'Fail');
      assert.deepEqual(pair.policy.metadata.labels, m.writePolicy.policy.metadata?.labels);
      assert.deepEqual(pair.policy.spec.matchConditions, m.writePolicy.policy.spec?.matchConditions);
      for (const v of pair.policy.spec.validations ?? []) assert.equal(v.reason, 'Forbidden');
    }
    assert.deepEqual(m.secretPolicy.policy.spec?.matchConstraints?.resourceRules, [
      {
        apiGroups: [''],
        apiVersions: ['*'],
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        resources: ['secrets'],
      },
    ]);
    assert.deepEqual(m.registrationPolicy.policy.spec?.matchConstraints?.resourceRules, [
      {
        apiGroups: ['admissionregistration.k8s.io'],
        apiVersions: ['*'],
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
      },
    ]);
  });

  test("the Secret policy carries the configured pull Secret's name, and the serving Secret only with the own issuer", () => {
    const text = (o: object): string => JSON.stringify(o);
    assert.match(text(m.secretPolicy.policy), /== 'registry-credentials'/);
    const landscape = renderWebhookManifests({ image: 'x', pullSecretName: 'landscape-pull' });
    assert.match(text(landscape.secretPolicy.policy), /== 'landscape-pull'/);
    assert.doesNotMatch(text(landscape.secretPolicy.policy), /registry-credentials/);
    assert.match(text(m.secretPolicy.policy), new RegExp(WEBHOOK_TLS_SECRET));
    const external = renderWebhookManifests({ image: 'x', servingCertIssuer: 'external' });
    assert.doesNotMatch(text(external.secretPolicy.policy), new RegExp(WEBHOOK_TLS_SECRET));
  });

  test("installed wherever the webhook is: rtb render webhook, KIM's manifests, direct mode's plan and its removal; the attestation reads them", () => {
    assert.deepEqual(named(webhookManifestList(m), 'ValidatingAdmissionPolicy'), NAMES);
    assert.deepEqual(named(webhookManifestList(m), 'ValidatingAdmissionPolicyBinding'), NAMES);
    const kim = renderKimManifests({ image: 'example.com/rtb:1.2.3', version: '1.2.3' });
    const kimNames = splitAsKim(kim.text)
      .filter((d) => /^kind: ValidatingAdmissionPolicy$/m.test(d))
      .map((d) => /^ {2}name: (\S+)$/m.exec(d)?.[1]);
    assert.deepEqual(kimNames, NAMES);
    const built = buildSyncSet(syncSources());
    assert.ok(built.ok);
    const plan = planRuntime(built.set, { image: 'example.com/rtb:1.2.3', version: '1.2.3' });
    assert.deepEqual(named(plan.webhook, 'ValidatingAdmissionPolicy'), NAMES);
    assert.deepEqual(named(plan.webhook, 'ValidatingAdmissionPolicyBinding'), NAMES);
    // Direct mode renders the set's name.
    assert.match(
      JSON.stringify(plan.manifests.secretPolicy.policy),
      new RegExp(`== '${built.set.config.imagePullSecret.name}'`),
    );
    // Before the Deployment whose ServiceAccount they narrow, so removed after it.
    const kinds = plan.webhook.map((o) => o.kind);
    assert.ok(kinds.lastIndexOf('ValidatingAdmissionPolicyBinding') < kinds.indexOf('Deployment'));
    const removal = removalOrder(plan);
    assert.deepEqual(named(removal, 'ValidatingAdmissionPolicy'), [...NAMES].reverse());
    const reads = attestationClusterRules().filter((r) =>
      r.apiGroups?.includes('admissionregistration.k8s.io'),
    );
    for (const r of reads) assert.deepEqual(r.resourceNames, NAMES);
  });

  test('the ClusterRole grants no list of Secrets but by the pull name, and no Secret read by any other name', () => {
    const secretRules = (m.clusterRole.rules ?? []).filter((r) => r.resources?.includes('secrets'));
    for (const r of secretRules) {
      const reads = r.verbs.filter((v) => ['get', 'list', 'watch', '*'].includes(v));
      if (reads.length > 0) assert.deepEqual(r.resourceNames, ['registry-credentials'], JSON.stringify(r));
    }
  });
});
