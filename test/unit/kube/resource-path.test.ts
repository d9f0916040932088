import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  collectionPath,
  describeObject,
  objectPath,
  pluralOf,
  ResourcePathError,
} from '../../../src/kube/resource-path.js';

describe('resource paths without discovery', () => {
  test('the plural of every kind the controller writes, and the guessing rule', () => {
    const expected: Record<string, string> = {
      Namespace: 'namespaces',
      ClusterTrustBundle: 'clustertrustbundles',
      Secret: 'secrets',
      ConfigMap: 'configmaps',
      ServiceAccount: 'serviceaccounts',
      ClusterRole: 'clusterroles',
      ClusterRoleBinding: 'clusterrolebindings',
      Role: 'roles',
      RoleBinding: 'rolebindings',
      Service: 'services',
      Deployment: 'deployments',
      PodDisruptionBudget: 'poddisruptionbudgets',
      MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
      ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
      Lease: 'leases',
      CustomResourceDefinition: 'customresourcedefinitions',
      Runtime: 'runtimes',
      NetworkPolicy: 'networkpolicies',
      Ingress: 'ingresses',
      Endpoints: 'endpoints',
    };
    for (const [kind, plural] of Object.entries(expected)) assert.equal(pluralOf(kind), plural, kind);
  });

  test('core and grouped, namespaced and cluster-scoped, names escaped', () => {
    assert.equal(
      objectPath({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'a', namespace: 'kyma-system' } }),
      '/api/v1/namespaces/kyma-system/secrets/a',
    );
    assert.equal(
      objectPath({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'ns' } }),
      '/apis/apps/v1/namespaces/ns/deployments/d',
    );
    assert.equal(
      objectPath({
        apiVersion: 'certificates.k8s.io/v1beta1',
        kind: 'ClusterTrustBundle',
        metadata: { name: 'example.com/ctb:1' },
      }),
      '/apis/certificates.k8s.io/v1beta1/clustertrustbundles/example.com%2Fctb%3A1',
    );
    assert.equal(collectionPath('v1', 'ConfigMap'), '/api/v1/configmaps');
    assert.equal(collectionPath('v1', 'ConfigMap', 'x'), '/api/v1/namespaces/x/configmaps');
  });

  test('an object without kind, apiVersion or name has no path', () => {
    assert.throws(() => objectPath({ kind: 'Secret', metadata: { name: 'a' } }), ResourcePathError);
    assert.throws(() => objectPath({ apiVersion: 'v1', kind: 'Secret', metadata: {} }), /Secret \?/);
    assert.equal(describeObject({ kind: 'Secret', metadata: { name: 'a', namespace: 'n' } }), 'Secret n/a');
  });
});
