import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  DASHBOARD_SCHEMA_VERSION,
  GRAFANA_75_PANEL_TYPES,
  dashboardQueries,
} from '../../../src/monitoring/dashboard-model.js';
import {
  metricCatalog,
  type MetricCatalog,
  type MetricFamily,
} from '../../../src/monitoring/metric-catalog.js';
import {
  DASHBOARD_LABEL,
  monitoringManifestList,
  renderMonitoring,
  type MonitoringManifests,
} from '../../../src/monitoring/monitoring-manifests.js';
import { defaultMonitoringOptions } from '../../../src/monitoring/monitoring-options.js';
import { MonitoringDefinitionError, type PromQuery } from '../../../src/monitoring/promql-query.js';

const options = defaultMonitoringOptions();
const rendered = (): MonitoringManifests => renderMonitoring(options);
const sides = (m: MonitoringManifests) => [m.kcp, m.runtime] as const;

/** Every query and alert expression. */
function allQueries(m: MonitoringManifests): PromQuery[] {
  return sides(m).flatMap((s) => [...dashboardQueries(s.dashboard), ...s.alerts.rules.map((r) => r.expr)]);
}

/** Every panel of a dashboard JSON, rows' nested panels included. */
function panelsOf(json: { panels?: unknown[] }): Record<string, unknown>[] {
  return (json.panels ?? []).flatMap((p) => {
    const panel = p as Record<string, unknown> & { panels?: unknown[] };
    return [panel, ...panelsOf(panel)];
  });
}

/** The catalog with one family renamed, or one of its labels. */
function renamed(
  catalog: MetricCatalog,
  name: string,
  change: (f: MetricFamily) => MetricFamily,
): MetricCatalog {
  const controller = new Map(catalog.controller);
  const family = controller.get(name);
  assert.ok(family, `${name} is served`);
  controller.delete(name);
  const next = change(family);
  controller.set(next.name, next);
  return { ...catalog, controller };
}

describe('rtb render monitoring', () => {
  test('dashboards: ConfigMaps labelled grafana_dashboard "1", schemaVersion at most 27, Grafana 7.5 panel types', () => {
    for (const s of sides(rendered())) {
      const cm = s.dashboardConfigMap;
      assert.equal(cm.metadata?.labels?.[DASHBOARD_LABEL], '1');
      const files = Object.entries(cm.data ?? {});
      assert.equal(files.length, 1);
      const [file, text] = files[0]!;
      assert.match(file, /\.json$/);
      const json = JSON.parse(text) as { schemaVersion: number; uid: string; panels: unknown[] };
      assert.ok(json.schemaVersion <= 27 && json.schemaVersion === DASHBOARD_SCHEMA_VERSION);
      assert.equal(json.uid, s.dashboard.uid);
      const panels = panelsOf(json);
      assert.ok(panels.length > 5);
      const ids = panels.map((p) => p.id);
      assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
      for (const p of panels) {
        assert.ok(GRAFANA_75_PANEL_TYPES.has(String(p.type)), `panel type ${String(p.type)}`);
        const grid = p.gridPos as { x: number; w: number };
        assert.ok(grid.x + grid.w <= 24, `${String(p.title)} fits the grid`);
        if (p.type !== 'row') assert.equal(p.datasource, '$datasource');
      }
    }
  });

  test('every alert has a severity, a summary, a description, a runbook that exists and a dashboard that is rendered', () => {
    const m = rendered();
    const uids = new Set(sides(m).map((s) => s.dashboard.uid));
    const names = new Set<string>();
    for (const s of sides(m)) {
      for (const group of s.prometheusRule.spec.groups) {
        for (const rule of group.rules) {
          names.add(rule.alert);
          assert.ok(['warning', 'critical'].includes(rule.labels.severity ?? ''), `${rule.alert} severity`);
          for (const key of ['summary', 'description', 'runbook_url', 'dashboard_url'])
            assert.ok((rule.annotations[key] ?? '') !== '', `${rule.alert} has ${key}`);
          assert.equal(rule.annotations.runbook_url, `${options.runbookBaseUrl}/${rule.alert}.md`);
          assert.ok(
            existsSync(new URL(`../../../docs/runbooks/${rule.alert}.md`, import.meta.url)),
            `docs/runbooks/${rule.alert}.md exists`,
          );
          const uid = /\/d\/([^/]+)$/.exec(rule.annotations.dashboard_url ?? '')?.[1];
          assert.ok(uid !== undefined && uids.has(uid), `${rule.alert} links a rendered dashboard`);
        }
      }
    }
    // What the issue asks for at least.
    for (const alert of [
      'RtbWebhookDown',
      'RtbWebhookFailingOpen',
      'RtbWebhookLatencyHigh',
      'RtbWebhookConfigRefused',
      'RtbRolloutHalted',
      'RtbRuntimeNotReady',
      'RtbDriftRepairsFailing',
      'RtbWebhookCertificateExpiring',
      'RtbKcpCaExpiring',
      'RtbDriftClientCertificateExpiring',
      'RtbTrustBundleExpiring',
      'RtbControllerNoLeader',
      'RtbWorkQueueNotDraining',
      'RtbControllerMemoryNearLimit',
      'RtbWebhookMemoryNearLimit',
    ])
      assert.ok(names.has(alert), alert);
  });

  test('every metric an expression names went through the checked references', () => {
    const metricLike =
      /\b(?:rtb|workqueue|controller_runtime|apiserver|process|nodejs|leader_election)_[a-zA-Z0-9_]+|\bup(?=\{)/g;
    for (const q of allQueries(rendered())) {
      for (const [name] of q.expr.matchAll(metricLike))
        assert.ok(q.metrics.includes(name), `${name} in ${q.expr} is checked`);
    }
  });

  test('a renamed metric or label fails the rendering, naming it', () => {
    const catalog = metricCatalog();
    /** Rendering over the catalog with `name` changed by `change` fails with a message matching `message`. */
    const refused = (name: string, change: Parameters<typeof renamed>[2], message: RegExp): void => {
      assert.throws(
        () => renderMonitoring(options, renamed(catalog, name, change)),
        (e: unknown) => e instanceof MonitoringDefinitionError && message.test(e.message),
      );
    };
    refused('rtb_runtimes', (f) => ({ ...f, name: 'rtb_runtimes_now' }), /rtb_runtimes: no such metric/);
    refused(
      'rtb_rollout_phase',
      (f) => ({ ...f, labelNames: ['stage'] }),
      /rtb_rollout_phase: .* no label phase/,
    );
    refused('rtb_propagation_seconds', (f) => ({ ...f, type: 'gauge' }), /rtb_propagation_seconds_bucket/);
  });

  test('the ServiceMonitor option adds the Service and ServiceMonitor that give the job label the queries select', () => {
    const plain = monitoringManifestList(rendered(), 'kcp');
    assert.ok(!plain.some((o) => (o as { kind?: string }).kind === 'ServiceMonitor'));
    const m = renderMonitoring({ ...options, serviceMonitor: true });
    const service = m.kcp.service;
    assert.ok(service);
    assert.equal(service.metadata?.name, options.controllerJob);
    assert.deepEqual(m.kcp.serviceMonitor?.spec.selector, {
      matchLabels: { 'app.kubernetes.io/name': options.controllerJob },
    });
    assert.equal(service.metadata.labels?.['app.kubernetes.io/name'], options.controllerJob);
    assert.ok(
      m.kcp.prometheusRule.spec.groups[0]!.rules.some((r) =>
        r.expr.includes(`job="${options.controllerJob}"`),
      ),
    );
    assert.deepEqual(
      monitoringManifestList(m, 'runtime').map((o) => (o as { kind?: string }).kind),
      ['ConfigMap', 'PrometheusRule'],
    );
  });
});
