import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { describeMutation } from '../../../src/local/describe-mutation.js';
import { seedExamplePod } from '../../../src/local/embedded-defaults.js';

test('describeMutation names the trust bundle mount, not the service account token the API server adds', () => {
  const sent = seedExamplePod('p');
  const stored: V1Pod = {
    metadata: { annotations: { 'rt-bootstrapper.kyma-project.io/defaulted': 'true' } },
    spec: {
      containers: [
        {
          name: 'pause',
          image: 'reg.local/kyma-project/rt-bootstrapper/pause:e2e',
          env: [{ name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' }],
          volumeMounts: [
            {
              name: 'kube-api-access-x',
              mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
              readOnly: true,
            },
            { name: 'certs', mountPath: '/etc/ssl/certs', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'kube-api-access-x', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
        {
          name: 'certs',
          projected: { sources: [{ clusterTrustBundle: { name: 'a:b:c', path: 'ca.pem' } }] },
        },
      ],
      imagePullSecrets: [{ name: 'registry-credentials' }],
    },
  };
  assert.deepEqual(describeMutation(sent, stored), [
    'registry rewrite   pause: replace.me/kyma-project/rt-bootstrapper/pause:e2e → reg.local/kyma-project/rt-bootstrapper/pause:e2e',
    'FIPS mode          pause: env KYMA_FIPS_MODE_ENABLED=true',
    'trust bundle mount pause: certs at /etc/ssl/certs (read-only)',
    'trust bundle       volume certs: ClusterTrustBundle a:b:c → ca.pem',
    'pull secret        imagePullSecrets += registry-credentials',
    'marked             rt-bootstrapper.kyma-project.io/defaulted: "true"',
  ]);
});
