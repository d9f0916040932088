/**
 * Everything `rtb render monitoring` prints (pure): the dashboards as ConfigMaps labelled
 * `grafana_dashboard: "1"` (Plutono's and Grafana's sidecar load those), the alerts as
 * PrometheusRules, and optionally a Service and ServiceMonitor that scrape the controller.
 */
import type { KubernetesObject, V1ConfigMap, V1Service } from '@kubernetes/client-node';
import { CONTROLLER_METRICS_PORT, CONTROLLER_NAME } from '../render/controller-manifests.js';
import { APP_NAME, APP_NAME_LABEL } from '../api/runtime-names.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';
import { renderMetricsScrape, type ServiceMonitor } from '../render/metrics-scrape.js';
import { kcpAlerts, runtimeAlerts, type AlertGroup, type AlertRule } from './alert-rules.js';
import { renderDashboard, type DashboardSpec } from './dashboard-model.js';
import { fleetDashboard } from './fleet-dashboard.js';
import { metricCatalog, type MetricCatalog } from './metric-catalog.js';
import type { MonitoringOptions } from './monitoring-options.js';
import { queryBuilder } from './promql-query.js';
import { webhookDashboard } from './webhook-dashboard.js';

/** The label Grafana's and Plutono's dashboard sidecars look for. */
export const DASHBOARD_LABEL = 'grafana_dashboard';

/** A PrometheusRule (prometheus-operator's monitoring.coreos.com/v1). */
export interface PrometheusRule extends KubernetesObject {
  readonly spec: {
    readonly groups: readonly {
      readonly name: string;
      readonly rules: readonly RenderedRule[];
    }[];
  };
}

/** One rule as Prometheus reads it. */
export interface RenderedRule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** What one side (the KCP or a runtime) gets. */
export interface MonitoringSide {
  readonly dashboard: DashboardSpec;
  readonly dashboardConfigMap: V1ConfigMap;
  readonly alerts: AlertGroup;
  readonly prometheusRule: PrometheusRule;
}

/** Everything, per side; the KCP's Service and ServiceMonitor with `serviceMonitor`. */
export interface MonitoringManifests {
  readonly kcp: MonitoringSide & { readonly service?: V1Service; readonly serviceMonitor?: ServiceMonitor };
  readonly runtime: MonitoringSide;
}

const labels = (): Record<string, string> => ({
  [APP_NAME_LABEL]: APP_NAME,
  [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
});

/** The rule as Prometheus reads it: severity, summary, description, runbook and dashboard. */
export function renderRule(rule: AlertRule, o: MonitoringOptions): RenderedRule {
  return {
    alert: rule.alert,
    expr: rule.expr.expr,
    for: rule.for,
    labels: { severity: rule.severity },
    annotations: {
      summary: rule.summary,
      description: rule.description,
      runbook_url: `${o.runbookBaseUrl}/${rule.alert}.md`,
      dashboard_url: `${o.dashboardBaseUrl}/d/${rule.dashboard}`,
    },
  };
}

function side(
  name: string,
  namespace: string,
  dashboard: DashboardSpec,
  alerts: AlertGroup,
  o: MonitoringOptions,
): MonitoringSide {
  return {
    dashboard,
    dashboardConfigMap: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${name}-dashboard`, namespace, labels: { ...labels(), [DASHBOARD_LABEL]: '1' } },
      data: { [`${dashboard.uid}.json`]: `${JSON.stringify(renderDashboard(dashboard), null, 2)}\n` },
    },
    alerts,
    prometheusRule: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name, namespace, labels: labels() },
      spec: { groups: [{ name: alerts.name, rules: alerts.rules.map((r) => renderRule(r, o)) }] },
    },
  };
}

/**
 * Renders the monitoring (pure but for reading the served metric families once): throws
 * MonitoringDefinitionError (./promql-query.ts) if a query reads a metric or label not served.
 */
export function renderMonitoring(
  o: MonitoringOptions,
  catalog: MetricCatalog = metricCatalog(),
): MonitoringManifests {
  const q = queryBuilder(catalog, o);
  const scrape = o.serviceMonitor
    ? renderMetricsScrape({
        name: o.controllerJob,
        namespace: o.kcpNamespace,
        podSelector: { 'app.kubernetes.io/name': CONTROLLER_NAME },
        portName: 'http-metrics',
        port: CONTROLLER_METRICS_PORT,
      })
    : undefined;
  return {
    kcp: {
      ...side('rt-bootstrapper-controller', o.kcpNamespace, fleetDashboard(q), kcpAlerts(q, o), o),
      service: scrape?.service,
      serviceMonitor: scrape?.serviceMonitor,
    },
    runtime: side('rt-bootstrapper-webhook', o.runtimeNamespace, webhookDashboard(q), runtimeAlerts(q, o), o),
  };
}

/** Which side's objects to print. */
export type MonitoringPart = 'kcp' | 'runtime' | 'all';

/** The objects in apply order: the KCP's, then the runtime's. */
export function monitoringManifestList(
  m: MonitoringManifests,
  part: MonitoringPart = 'all',
): readonly object[] {
  const kcp = [
    m.kcp.dashboardConfigMap,
    m.kcp.prometheusRule,
    ...(m.kcp.service ? [m.kcp.service] : []),
    ...(m.kcp.serviceMonitor ? [m.kcp.serviceMonitor] : []),
  ];
  const runtime = [m.runtime.dashboardConfigMap, m.runtime.prometheusRule];
  return part === 'kcp' ? kcp : part === 'runtime' ? runtime : [...kcp, ...runtime];
}
