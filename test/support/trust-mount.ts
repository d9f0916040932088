/**
 * What the trust-bundle tests on real API servers share: a Pod created in kyma-system with the
 * warnings of its admission, the seed Pod under a name, the check that a Pod got no mount, and the
 * webhook's count of Pods that got no mount.
 */
import type { V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { request, type RequestOptions } from 'node:https';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { CTB_HASH_ANNOTATION } from '../../src/api/trust-stamp.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { seedPodBefore } from './fixtures.js';
import type { TestWebhook } from './webhook.js';

/**
 * Creates a Pod through the API server in `namespace`; the stored Pod and the response's Warning
 * headers (what kubectl prints), which client-node's API does not hand back.
 */
export async function createPodWithWarnings(
  kc: ClusterAccess,
  pod: V1Pod,
  namespace = RUNTIME_NAMESPACE,
): Promise<{ pod: V1Pod; warnings: string[] }> {
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const url = new URL(`${kc.getCurrentCluster()?.server ?? ''}/api/v1/namespaces/${namespace}/pods`);
  const body = JSON.stringify(pod);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ...options,
        method: 'POST',
        headers: {
          ...(options.headers as Record<string, string>),
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) >= 300) {
            reject(new Error(`create Pod: ${res.statusCode ?? 0} ${text}`));
            return;
          }
          const header = res.headers.warning;
          const warnings = header === undefined ? [] : Array.isArray(header) ? header : [header];
          resolve({ pod: JSON.parse(text) as V1Pod, warnings });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The seed Pod under a new name in kyma-system (every feature applies there by the seed config). */
export function seedPodNamed(name: string): V1Pod {
  const pod = seedPodBefore() as V1Pod;
  return { ...pod, metadata: { ...pod.metadata, name, namespace: RUNTIME_NAMESPACE } };
}

/**
 * Asserts that the webhook gave `pod` nothing of the trust bundle: no volume (the seed config's
 * `rt-bootstrapper-certs`), no container mounting `/etc/ssl/certs`, no bundle hash stamped.
 */
export function assertNoTrustMount(pod: V1Pod): void {
  assert.equal(
    pod.spec?.volumes?.find((v) => v.name === 'rt-bootstrapper-certs'),
    undefined,
  );
  for (const c of pod.spec?.containers ?? [])
    assert.ok(!(c.volumeMounts ?? []).some((m) => m.mountPath === '/etc/ssl/certs'), c.name);
  assert.equal(pod.metadata?.annotations?.[CTB_HASH_ANNOTATION], undefined);
}

/** The webhook's count of Pods that asked for the trust bundle and got no mount, for `reason`. */
export async function trustBundleSkipped(hook: TestWebhook, reason: string): Promise<number> {
  const text = await hook.app.registry.metrics();
  const m = new RegExp(`^rtb_webhook_trust_bundle_skipped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return Number(m?.[1] ?? 0);
}
