import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { APP_NAME_LABEL, VERSION_LABEL } from '../../../src/api/runtime-names.js';
import { planRuntime } from '../../../src/controller/direct/runtime-manifests.js';
import { buildSyncSet } from '../../../src/controller/direct/sync-set.js';
import { renderKimManifests, splitAsKim } from '../../../src/render/kim-manifests.js';
import { renderWebhookManifests } from '../../../src/render/webhook-manifests.js';
import {
  WEBHOOK_WRITE_POLICY,
  renderWebhookWritePolicy,
  sameExcept,
  webhookUserName,
} from '../../../src/render/webhook-write-policy.js';
import { MANAGED_BY_LABEL } from '../../../src/api/managed-labels.js';
import { syncSources } from '../../support/fixtures.js';

describe('the write policy of the webhook ServiceAccount (rendering)', () => {
  const m = renderWebhookManifests({ image: 'example.com/rtb:1.2.3', version: '1.2.3' });
  const { policy, binding } = m.writePolicy;

  test('named and labelled like our other objects, bound with Deny, failing closed', () => {
    assert.equal(WEBHOOK_WRITE_POLICY, 'rt-bootstrapper-webhook-writes');
    for (const o of [policy, binding]) {
      assert.deepEqual(o.metadata, {
        name: WEBHOOK_WRITE_POLICY,
        labels: {
          [APP_NAME_LABEL]: 'rt-bootstrapper',
          [MANAGED_BY_LABEL]: 'rt-bootstrapper',
          [VERSION_LABEL]: '1.2.3',
        },
      });
      assert.equal(o.apiVersion, 'admissionregistration.k8s.io/v1');
    }
    assert.equal(binding.spec?.policyName, WEBHOOK_WRITE_POLICY);
    assert.deepEqual(binding.spec.validationActions, ['Deny']);
    assert.equal(policy.spec?.failurePolicy, 'Fail');
  });

  test('matches only the ServiceAccount of the namespace it is rendered for', () => {
    assert.deepEqual(policy.spec?.matchConditions, [
      {
        name: 'webhook-service-account',
        expression:
          "request.userInfo.username == 'system:serviceaccount:kyma-system:rt-bootstrapper-controller-manager'",
      },
    ]);
    const other = renderWebhookWritePolicy('other-ns', {});
    assert.match(other.policy.spec?.matchConditions?.[0]?.expression ?? '', /:other-ns:/);
    assert.equal(webhookUserName('x'), 'system:serviceaccount:x:rt-bootstrapper-controller-manager');
    // The own-Deployment exception names that namespace too.
    const allowed = other.policy.spec?.variables?.find((v) => v.name === 'allowedAnnotations');
    assert.match(allowed?.expression ?? '', /request\.namespace == 'other-ns'/);
  });

  test('the updates of the three rollable kinds and Pods, and Pod creates, nothing else', () => {
    assert.deepEqual(policy.spec?.matchConstraints?.resourceRules, [
      {
        apiGroups: ['apps'],
        apiVersions: ['*'],
        operations: ['UPDATE'],
        resources: ['deployments', 'statefulsets', 'daemonsets'],
      },
      { apiGroups: [''], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] },
    ]);
    for (const v of policy.spec.validations ?? []) {
      assert.equal(v.reason, 'Forbidden');
      assert.match(v.message ?? '', /^rt-bootstrapper's ServiceAccount /);
    }
  });

  test('sameExcept compares both ways, the exceptions in parentheses', () => {
    assert.equal(
      sameExcept('a', 'b', "c ? ['x'] : []"),
      "a.all(k, k in (c ? ['x'] : []) || (k in b && a[k] == b[k])) && b.all(k, k in (c ? ['x'] : []) || k in a)",
    );
  });

  test("installed everywhere the webhook is: KIM's manifests (cut where KIM cuts) and direct mode's plan", () => {
    const kim = renderKimManifests({ image: 'example.com/rtb:1.2.3', version: '1.2.3' });
    const kinds = splitAsKim(kim.text).map((d) => /^kind: (\S+)$/m.exec(d)?.[1]);
    assert.ok(kinds.includes('ValidatingAdmissionPolicy'));
    assert.ok(kinds.includes('ValidatingAdmissionPolicyBinding'));
    const built = buildSyncSet(syncSources());
    assert.ok(built.ok);
    const plan = planRuntime(built.set, { image: 'example.com/rtb:1.2.3', version: '1.2.3' });
    const webhookKinds = plan.webhook.map((o) => o.kind);
    // Before the Deployment whose ServiceAccount it narrows, so removed after it.
    const policyAt = webhookKinds.indexOf('ValidatingAdmissionPolicy');
    assert.ok(policyAt >= 0 && policyAt < webhookKinds.indexOf('Deployment'));
    assert.equal(webhookKinds[policyAt + 1], 'ValidatingAdmissionPolicyBinding');
  });
});
