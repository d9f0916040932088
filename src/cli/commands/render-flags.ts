/** The flags of `rtb render webhook`. */
export interface RenderWebhookFlags {
  image?: string;
  namespace: string;
  replicas: string;
  caBundle?: string;
  url?: string;
  failurePolicy: 'Ignore' | 'Fail';
  version?: string;
  landscape?: string;
  priorityClassName?: string;
  /** Comma-separated: restart rights per namespace. */
  restartNamespaces?: string;
  serviceMonitor?: boolean;
}

/** The flags of `rtb render kim`. */
export interface RenderKimFlags {
  image?: string;
  version?: string;
  landscape?: string;
  namespace: string;
  replicas: string;
  raw?: boolean;
  priorityClassName?: string;
  /** Comma-separated: restart rights per namespace. */
  restartNamespaces?: string;
}

/** The flags of `rtb render controller`. */
export interface RenderControllerFlags {
  image?: string;
  namespace: string;
  replicas: string;
  pullSecret: string;
  clusterTrustBundle?: string;
  configMap: string;
  manifestsConfigMap?: string;
  runtimeSelector?: string;
  signal: 'annotation' | 'label';
  coalesce: string;
  mode: 'annotate' | 'direct';
  sharding?: boolean;
  perRuntimeMetrics?: boolean;
}

/** The flags of `rtb render monitoring`. */
export interface RenderMonitoringFlags {
  part: 'kcp' | 'runtime' | 'all';
  kcpNamespace: string;
  runtimeNamespace: string;
  controllerJob: string;
  webhookJob: string;
  runbookBaseUrl: string;
  dashboardBaseUrl: string;
  serviceMonitor?: boolean;
}
