import { RUNTIME_NAMESPACE } from '../api/runtime.js';
import { WEBHOOK_METRICS_SERVICE } from '../api/runtime-names.js';
import { CONFIG_MAP_NAMESPACE } from '../api/webhook-features.js';

/** The job label of the controller's series, as the ServiceMonitor of `rtb render monitoring` names it. */
export const CONTROLLER_METRICS_SERVICE = 'rt-bootstrapper-controller-metrics';
/** Where the runbooks are published (docs/runbooks/<alert>.md of this repository). */
export const DEFAULT_RUNBOOK_BASE_URL =
  'https://github.com/kyma-project/rt-bootstrapper/blob/main/docs/runbooks';
/** A placeholder the operator replaces with their Plutono's address (`--dashboard-base-url`). */
export const DEFAULT_DASHBOARD_BASE_URL = 'https://plutono.invalid';

/** Settings of `rtb render monitoring`. */
export interface MonitoringOptions {
  /** Namespace of the KCP objects (controller dashboard and rules). */
  readonly kcpNamespace: string;
  /** Namespace of the runtime objects (webhook dashboard and rules). */
  readonly runtimeNamespace: string;
  /** The `job` label of the controller's series. */
  readonly controllerJob: string;
  /** The `job` label of the webhook's series. */
  readonly webhookJob: string;
  /** `runbook_url` is this plus `/<alert>.md`. */
  readonly runbookBaseUrl: string;
  /** `dashboard_url` is this plus `/d/<uid>`. */
  readonly dashboardBaseUrl: string;
  /** Also a Service and a ServiceMonitor that scrape the controller. */
  readonly serviceMonitor: boolean;
}

/** The defaults: the names the rendered manifests use. */
export function defaultMonitoringOptions(): MonitoringOptions {
  return {
    kcpNamespace: RUNTIME_NAMESPACE,
    runtimeNamespace: CONFIG_MAP_NAMESPACE,
    controllerJob: CONTROLLER_METRICS_SERVICE,
    webhookJob: WEBHOOK_METRICS_SERVICE,
    runbookBaseUrl: DEFAULT_RUNBOOK_BASE_URL,
    dashboardBaseUrl: DEFAULT_DASHBOARD_BASE_URL,
    serviceMonitor: false,
  };
}
