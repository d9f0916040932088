// The KCP's lists on a runtime at deletion (issue 45, "lists by bytes"): our labelled objects are
// listed metadata only, and a page over the cap on a runtime's answers (its admin may annotate our
// objects) is asked again in half instead of failing the runtime. On a real API server, through a
// runtime client with the production cap (2 MiB): 30 labelled Secrets with 250 KB annotations,
// 7.5 MB of metadata, are all removed.
import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../src/api/managed-labels.js';
import { RUNTIME_ANSWER_MAX_BYTES } from '../../src/controller/direct/runtime-clients.js';
import { RuntimeInstaller } from '../../src/controller/direct/runtime-installer.js';
import type { RuntimePlan } from '../../src/controller/direct/runtime-manifests.js';
import { KeepAliveAccess } from '../../src/kube/keep-alive-access.js';
import { useControlPlane } from '../support/control-plane.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const NS = 'team-annotated';
const COPIES = 30;
let core: CoreV1Api;

describe("the KCP's removal lists on a runtime", () => {
  before(async () => {
    core = plane().cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    for (let i = 0; i < COPIES; i++)
      await core.createNamespacedSecret({
        namespace: NS,
        body: {
          metadata: {
            name: `copy-${i}`,
            labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
            annotations: { 'admin.example.com/blob': 'a'.repeat(250_000) },
          },
          type: 'Opaque',
          data: { token: 'eA==' },
        },
      });
  });

  test('labelled objects whose metadata exceeds the answer cap page by page are all removed', async () => {
    const access = new KeepAliveAccess(
      plane().cluster('runtime').kubeConfig(),
      {},
      {
        maxAnswerBytes: RUNTIME_ANSWER_MAX_BYTES,
        deadlineMs: 60_000,
      },
    );
    const plan = {
      registration: [],
      webhook: [],
      manifests: { namespace: { metadata: { name: 'kyma-system' } } },
    } as unknown as Pick<RuntimePlan, 'registration' | 'webhook' | 'manifests'>;
    await new RuntimeInstaller(access, 30_000).uninstall(plan);
    const left = await core.listNamespacedSecret({
      namespace: NS,
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
    });
    assert.deepEqual(
      left.items.map((s) => s.metadata?.name),
      [],
    );
  });
});
