import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderWebhookManifests, webhookManifestList } from '../../../src/render/webhook-manifests.js';
import { defaultMonitoringOptions } from '../../../src/monitoring/monitoring-options.js';

const base = { image: 'example.com/rtb:1', version: '1.0.0' } as const;

describe('rtb render webhook: priorityClassName and a ServiceMonitor', () => {
  test('no PriorityClass unless one is named; then the Pods carry it', () => {
    assert.equal(renderWebhookManifests(base).deployment.spec?.template.spec?.priorityClassName, undefined);
    const m = renderWebhookManifests({ ...base, priorityClassName: 'rt-bootstrapper-priority-class' });
    assert.equal(m.deployment.spec?.template.spec?.priorityClassName, 'rt-bootstrapper-priority-class');
  });

  test("the ServiceMonitor scrapes the webhook Pods' metrics port under the job the dashboards and alerts select", () => {
    assert.equal(renderWebhookManifests(base).metricsScrape, undefined);
    const m = renderWebhookManifests({ ...base, serviceMonitor: true });
    const scrape = m.metricsScrape;
    assert.ok(scrape);
    const { service, serviceMonitor } = scrape;
    assert.equal(service.metadata?.name, defaultMonitoringOptions().webhookJob);
    const podLabels = m.deployment.spec?.template.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(service.spec?.selector ?? {})) assert.equal(podLabels[k], v, k);
    const port = service.spec?.ports?.[0];
    const container = m.deployment.spec?.template.spec?.containers[0];
    const named = container?.ports?.find((p) => p.name === port?.targetPort);
    assert.ok(named, 'the Service targets a named container port');
    assert.equal(named.containerPort, port?.port);
    const selector = (serviceMonitor.spec.selector as { matchLabels: Record<string, string> }).matchLabels;
    for (const [k, v] of Object.entries(selector)) assert.equal(service.metadata.labels?.[k], v, k);
    assert.deepEqual(serviceMonitor.spec.endpoints, [
      { port: port?.name, path: '/metrics', interval: '30s' },
    ]);
    const list = webhookManifestList(m);
    assert.deepEqual(list.slice(-2), [service, serviceMonitor]);
  });
});
