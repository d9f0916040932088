import type { V1NetworkPolicy } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { planWebhook } from '../../../src/controller/direct/runtime-manifests.js';
import { renderKimManifests } from '../../../src/render/kim-manifests.js';
import { renderWebhookManifests } from '../../../src/render/webhook-manifests.js';
import { networkPolicyList } from '../../../src/render/webhook-network-policies.js';
import { upstreamInstall } from '../../support/upstream-install.js';

interface Policy {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec: {
    podSelector: { matchLabels?: Record<string, string> };
    policyTypes: string[];
    ingress?: { from?: unknown[]; ports: { port: number; protocol: string }[] }[];
    egress?: { ports: { port: number; protocol: string }[] }[];
  };
}

const m = renderWebhookManifests({ image: 'x', version: '1.0.0' });
const policies = networkPolicyList(m.networkPolicies) as unknown as Policy[];
const byName = (name: string): Policy => {
  const p = policies.find((x) => x.metadata.name.endsWith(name));
  assert.ok(p, name);
  return p;
};
const UPSTREAM = (upstreamInstall() as unknown as Policy[]).filter((o) => o.kind === 'NetworkPolicy');

describe('rendered NetworkPolicies', () => {
  test("upstream's three, under upstream's names, with upstream's selector and rules", () => {
    assert.equal(UPSTREAM.length, 3);
    assert.deepEqual(
      policies.map((p) => p.metadata.name).sort(),
      UPSTREAM.map((p) => p.metadata.name).sort(),
    );
    for (const u of UPSTREAM) {
      const ours = byName(u.metadata.name);
      assert.equal(ours.metadata.namespace, u.metadata.namespace);
      assert.deepEqual(ours.spec, u.spec, u.metadata.name);
    }
  });

  test('labelled ours (so the upstream cleanup never takes them), keeping upstream’s purpose label', () => {
    for (const p of policies) {
      assert.equal(p.metadata.labels?.['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
      assert.equal(p.metadata.labels['app.kubernetes.io/version'], '1.0.0');
    }
    assert.equal(byName('allow-egress-to-apiserver').metadata.labels?.purpose, 'apiserver');
  });

  test("they select the Deployment's Pods, on the ports its container declares", () => {
    const pod = m.deployment.spec!.template;
    const container = pod.spec!.containers[0]!;
    for (const p of policies)
      for (const [k, v] of Object.entries(p.spec.podSelector.matchLabels ?? {}))
        assert.equal(pod.metadata!.labels![k], v, `${p.metadata.name} selects by ${k}`);
    const port = (name: string): number | undefined =>
      container.ports!.find((x) => x.name === name)?.containerPort;
    assert.deepEqual(byName('ingress-allow-webhook-traffic').spec.ingress![0]!.ports, [
      { port: port('webhook-server'), protocol: 'TCP' },
    ]);
    assert.deepEqual(byName('allow-metrics-traffic').spec.ingress![0]!.ports, [
      { port: port('metrics'), protocol: 'TCP' },
    ]);
    assert.ok(container.args!.includes(`--metrics-port=${String(port('metrics'))}`));
  });

  test('the webhook port from anywhere, the metrics port only from labelled scrapers of the namespace', () => {
    const webhook = byName('ingress-allow-webhook-traffic').spec.ingress![0]!;
    assert.equal(webhook.from, undefined, 'the API server has no address known in advance');
    const metrics = byName('allow-metrics-traffic').spec.ingress![0]!;
    assert.deepEqual(metrics.from, [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kyma-system' } },
        podSelector: { matchLabels: { 'networking.kyma-project.io/metrics-scraping': 'allowed' } },
      },
    ]);
    const other = networkPolicyList(
      renderWebhookManifests({ image: 'x', namespace: 'rtb' }).networkPolicies,
    ) as unknown as Policy[];
    const scrapers = other.find((p) => p.metadata.name.endsWith('allow-metrics-traffic'))!;
    assert.equal(scrapers.metadata.namespace, 'rtb');
    assert.deepEqual(
      (scrapers.spec.ingress![0]!.from![0] as { namespaceSelector: unknown }).namespaceSelector,
      { matchLabels: { 'kubernetes.io/metadata.name': 'rtb' } },
    );
  });

  test('with the drift channel, egress to the listener port and DNS besides the API server', () => {
    const drift = (url: string): Policy | undefined =>
      (
        networkPolicyList(
          renderWebhookManifests({ image: 'x', driftListenerUrl: url }).networkPolicies,
        ) as unknown as Policy[]
      ).find((p) => p.metadata.name.endsWith('allow-egress-to-kcp'));
    assert.equal(byName('allow-egress-to-apiserver').spec.egress!.length, 1);
    assert.equal(drift('https://kcp.example:8443')?.spec.policyTypes[0], 'Egress');
    assert.deepEqual(drift('https://kcp.example:8443')?.spec.egress, [
      { ports: [{ port: 8443, protocol: 'TCP' }] },
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
    ]);
    assert.deepEqual(drift('https://kcp.example')?.spec.egress?.[0], {
      ports: [{ port: 443, protocol: 'TCP' }],
    });
    assert.equal(
      policies.find((p) => p.metadata.name.endsWith('allow-egress-to-kcp')),
      undefined,
      'none without the drift channel',
    );
  });

  test('in both outputs: KIM’s manifests (as YAML, `from` spelled as the API spells it) and direct mode', () => {
    const kim = renderKimManifests({ image: 'x', version: '1.0.0' });
    const fromKim = kim.text
      .split('---')
      .map((d) => parse(d) as Policy | null)
      .filter((o): o is Policy => o?.kind === 'NetworkPolicy');
    assert.deepEqual(fromKim, JSON.parse(JSON.stringify(policies)));
    assert.ok(!kim.text.includes('_from'));
    const direct = planWebhook(undefined, { image: 'x', version: '1.0.0' }).webhook.filter(
      (o) => o.kind === 'NetworkPolicy',
    ) as V1NetworkPolicy[];
    assert.deepEqual(direct, policies);
    const kinds = planWebhook(undefined, { image: 'x', version: '1.0.0' }).webhook.map((o) => o.kind);
    assert.ok(kinds.indexOf('NetworkPolicy') < kinds.indexOf('Deployment'), 'before the Pods start');
  });
});
