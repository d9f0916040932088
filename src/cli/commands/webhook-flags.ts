/** The flags of `rtb webhook`. */
export interface WebhookFlags {
  tlsCert?: string;
  tlsKey?: string;
  tlsSecret?: string;
  webhookService: string;
  tlsExtraSan: string[];
  certLease: string;
  servingCertIssuer: string;
  port: string;
  metricsPort?: string;
  host: string;
  kubeconfig?: string;
  configFile?: string;
  configMap: string;
  configKey: string;
  statusConfigMap?: string;
  failClosed?: boolean;
  landscape?: string;
  logLevel: string;
  driftUrl?: string;
  driftCert: string;
  driftKey: string;
  driftCa: string;
  /** Accepted from manifests of earlier releases, and ignored. */
  reuseAnswers?: string;
  shutdownDelay: string;
  /** false with `--no-trust-restart`. */
  trustRestart: boolean;
  restartConcurrency: string;
  restartDelay: string;
  restartDeadline: string;
  restartLease: string;
  /** Comma-separated; absent: restart rights everywhere. */
  restartNamespaces?: string;
  /** `registry=url`, repeatable. */
  registryServer?: string[];
}
