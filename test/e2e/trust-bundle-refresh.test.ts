// test-schedule: early
/**
 * How soon Pods see a changed ClusterTrustBundle on a real node (issue 15's restart delay): new
 * Pods created one after another from the change on until one reads the new bundle, and a running
 * Pod whose projected file kubelet refreshes in place. The figures are printed
 * (docs/trust-restart.md, docs/figures.md), never asserted as times.
 */
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { eventually } from '../../src/envtest/eventually.js';
import { BUNDLE } from '../support/trust-workloads.js';
import { useNodeLandscape } from './support/node-landscape.js';
import { putTrustBundle } from '../support/trust-bundles.js';

const landscape = useNodeLandscape();
const NAMESPACE = 'default';
const FILE = '/etc/ssl/certs/bundle.pem';
const POD_READY_MS = 180_000;

/** A Pod with the bundle projected (as our webhook adds it) that prints its file's first base64 line. */
function readerPod(name: string, image: string, every?: number): V1Pod {
  const line = `require('node:fs').readFileSync(${JSON.stringify(FILE)}, 'utf8').split('\\n')[1]`;
  const script =
    every === undefined
      ? `console.log('seen=' + ${line}); setInterval(() => {}, 1e9)`
      : `setInterval(() => console.log(Date.now() + ' seen=' + ${line}), ${every})`;
  return {
    metadata: { name },
    spec: {
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'reader',
          image,
          command: ['/usr/bin/node', '-e', script],
          volumeMounts: [{ name: 'certs', mountPath: '/etc/ssl/certs', readOnly: true }],
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
      volumes: [
        {
          name: 'certs',
          projected: {
            defaultMode: 420,
            sources: [{ clusterTrustBundle: { name: BUNDLE, path: 'bundle.pem' } }],
          },
        },
      ],
    },
  };
}

async function logOnceRunning(core: CoreV1Api, name: string): Promise<string> {
  return eventually(
    async () => {
      const pod = await core.readNamespacedPod({ name, namespace: NAMESPACE });
      if (pod.status?.phase !== 'Running') return undefined;
      const log = await core.readNamespacedPodLog({ name, namespace: NAMESPACE });
      return log.includes('seen=') ? log : undefined;
    },
    POD_READY_MS,
    `Pod ${name} to print the file`,
    500,
  );
}

const marker = (pem: string): string => pem.split('\n')[1] ?? '';

describe('a changed ClusterTrustBundle on a real node', () => {
  test('new Pods read the new bundle once kubelet’s cache lets them; a running Pod gets it in place', async () => {
    const l = landscape();
    const kc = l.plane.cluster('runtime').kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const first = await createCertificateAuthority({ commonName: 'e2e-refresh-0' });
    await putTrustBundle(kc, BUNDLE, {
      signerName: 'rt-bootstrapper-k3d.test/ctb',
      trustBundle: first.certPem,
    });
    await core.createNamespacedPod({ namespace: NAMESPACE, body: readerPod('watcher', l.openImage, 1_000) });
    assert.match(await logOnceRunning(core, 'watcher'), new RegExp(`seen=${escape(marker(first.certPem))}`));

    const figures: string[] = [];
    let latest = first.certPem;
    let lastChange = Date.now();
    for (let round = 1; round <= 1; round++) {
      const next = await createCertificateAuthority({ commonName: `e2e-refresh-${round}` });
      await putTrustBundle(kc, BUNDLE, { trustBundle: next.certPem });
      const changed = Date.now();
      lastChange = changed;
      // New Pods one after another until one reads the new bundle.
      const seen: string[] = [];
      for (let k = 0; ; k++) {
        const name = `fresh-${round}-${k}`;
        const createdAfterMs = Date.now() - changed;
        await core.createNamespacedPod({ namespace: NAMESPACE, body: readerPod(name, l.openImage) });
        const log = await logOnceRunning(core, name);
        const fresh = log.includes(`seen=${marker(next.certPem)}`);
        seen.push(`${createdAfterMs} ms: ${fresh ? 'new' : 'old'}`);
        if (fresh) break;
        // kubelet 1.34 keeps a bundle read by name for 5 minutes (see docs/trust-restart.md).
        assert.ok(
          Date.now() - changed < 9 * 60_000,
          `round ${round}: no new Pod read the new bundle: ${seen.join(', ')}`,
        );
        await new Promise((r) => setTimeout(r, 10_000));
        await core.deleteNamespacedPod({ name, namespace: NAMESPACE, gracePeriodSeconds: 0 });
      }
      figures.push(
        `round ${round}: Pods created after the change read (created at: bundle) ${seen.join(', ')}`,
      );
      latest = next.certPem;
    }

    // The running Pod: kubelet rewrites the file on its periodic sync of the Pod's volumes.
    const refreshedAt = await eventually(
      async () => {
        const log = await core.readNamespacedPodLog({ name: 'watcher', namespace: NAMESPACE });
        const hit = log.split('\n').find((l) => l.endsWith(`seen=${marker(latest)}`));
        return hit === undefined ? undefined : Number(hit.split(' ')[0]);
      },
      600_000,
      'the running Pod to see the last bundle in place',
      // The Pod stamps each line, so reading its log once a second loses no precision.
      1_000,
    );
    figures.push(
      `running Pod: file refreshed in place ${Math.round((refreshedAt - lastChange) / 1000)} s after the last change`,
    );
    for (const f of figures) console.log(`trust-bundle refresh: ${f}`);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
