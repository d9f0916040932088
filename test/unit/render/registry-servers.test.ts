import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planRuntime } from '../../../src/controller/direct/runtime-manifests.js';
import { buildSyncSet } from '../../../src/controller/direct/sync-set.js';
import { renderWebhookManifests } from '../../../src/render/webhook-manifests.js';
import { HOST_IP_REFERENCE } from '../../../src/render/webhook-options.js';
import { syncSources } from '../../support/fixtures.js';

const image = 'example.com/rtb:1.2.3';
const argsOf = (m: ReturnType<typeof renderWebhookManifests>): string[] =>
  m.deployment.spec?.template.spec?.containers[0]?.args ?? [];

test('registry servers become one --registry-server each; none by default', () => {
  assert.ok(!argsOf(renderWebhookManifests({ image })).some((a) => a.startsWith('--registry-server')));
  const args = argsOf(
    renderWebhookManifests({
      image,
      registryServers: { '127.0.0.1:5000': 'http://10.213.0.1:5000', 'm.example': 'https://10.0.0.9' },
    }),
  );
  assert.deepEqual(
    args.filter((a) => a.startsWith('--registry-server')),
    [
      '--registry-server=127.0.0.1:5000=http://10.213.0.1:5000',
      '--registry-server=m.example=https://10.0.0.9',
    ],
  );
});

test('direct mode passes the release’s registry servers to every runtime’s webhook', () => {
  const built = buildSyncSet(syncSources());
  assert.ok(built.ok);
  const plan = planRuntime(built.set, {
    image,
    version: '1.2.3',
    registryServers: { '127.0.0.1:5000': 'http://10.213.0.1:5000' },
  });
  const deployment = plan.webhook.find((o) => o.kind === 'Deployment') as ReturnType<
    typeof renderWebhookManifests
  >['deployment'];
  assert.ok(
    (deployment.spec?.template.spec?.containers[0]?.args ?? []).includes(
      '--registry-server=127.0.0.1:5000=http://10.213.0.1:5000',
    ),
  );
});

test('a server on the node’s IP gets HOST_IP from the downward API; none without such a server', () => {
  const envOf = (m: ReturnType<typeof renderWebhookManifests>) =>
    m.deployment.spec?.template.spec?.containers[0]?.env ?? [];
  const plain = renderWebhookManifests({ image, registryServers: { r: 'http://10.0.0.1:5000' } });
  assert.ok(!envOf(plain).some((e) => e.name === 'HOST_IP'));
  const onNode = renderWebhookManifests({
    image,
    registryServers: { '127.0.0.1:5000': `http://${HOST_IP_REFERENCE}:5000` },
  });
  assert.deepEqual(
    envOf(onNode).find((e) => e.name === 'HOST_IP'),
    { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
  );
  assert.ok(argsOf(onNode).includes('--registry-server=127.0.0.1:5000=http://$(HOST_IP):5000'));
});
