/**
 * A metrics Service and the prometheus-operator ServiceMonitor that scrapes it (pure): the job
 * label of the scraped series is the Service's name, which the dashboards and alerts select.
 */
import type { KubernetesObject, V1Service } from '@kubernetes/client-node';
import { APP_NAME_LABEL } from '../api/runtime-names.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';

/** A ServiceMonitor (monitoring.coreos.com/v1). */
export type ServiceMonitor = KubernetesObject & { readonly spec: Readonly<Record<string, unknown>> };

/** The Service and its ServiceMonitor. */
export interface MetricsScrape {
  readonly service: V1Service;
  readonly serviceMonitor: ServiceMonitor;
}

/** What to scrape: Pods matching `podSelector` on their port named `portName`. */
export interface MetricsScrapeOptions {
  /** The Service's and ServiceMonitor's name: the job label. */
  readonly name: string;
  readonly namespace: string;
  readonly podSelector: Readonly<Record<string, string>>;
  readonly portName: string;
  readonly port: number;
}

/** Renders the pair. */
export function renderMetricsScrape(o: MetricsScrapeOptions): MetricsScrape {
  const meta = {
    name: o.name,
    namespace: o.namespace,
    labels: { [APP_NAME_LABEL]: o.name, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
  };
  return {
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta,
      spec: {
        selector: { ...o.podSelector },
        ports: [{ name: o.portName, port: o.port, targetPort: o.portName, protocol: 'TCP' }],
      },
    },
    serviceMonitor: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: meta,
      spec: {
        selector: { matchLabels: { [APP_NAME_LABEL]: o.name } },
        namespaceSelector: { matchNames: [o.namespace] },
        endpoints: [{ port: o.portName, path: '/metrics', interval: '30s' }],
      },
    },
  };
}
