import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** How one admission request ended, the `result` label. */
export type AdmissionResult = 'mutated' | 'unchanged' | 'bad_request' | 'error';

/** The webhook's Prometheus metrics. Labels are closed sets: never names, namespaces or secrets. */
export interface WebhookMetrics {
  readonly requests: Counter<'result'>;
  readonly duration: Histogram<'result'>;
  /** By feature name. */
  readonly mutations: Counter<'feature'>;
  readonly configReloads: Counter<'result'>;
  readonly configGeneration: Gauge;
  /** 1 while the latest configuration text read was refused (the last good one, if any, stays in force). */
  readonly configRefused: Gauge;
  /** notAfter of the serving certificate served now (Unix seconds). */
  readonly servingCertificateExpiry: Gauge;
  readonly pullSecretCopies: Counter<'result'>;
  readonly pullSecretMissing: Counter;
  readonly certReloads: Counter<'result'>;
  /** Requests the server's memory bounds turned away, by reason (./request-gate.ts). */
  readonly refused: Counter<'reason'>;
  /** Pods that asked for the trust bundle where the runtime cannot take the mount, by reason. */
  readonly trustBundleSkipped: Counter<'reason'>;
}

/** Registers the webhook metrics on `registry`. */
export function createWebhookMetrics(registry: Registry): WebhookMetrics {
  const registers = [registry];
  return {
    requests: new Counter({
      name: 'rtb_webhook_requests_total',
      help: 'Admission requests by result.',
      labelNames: ['result'],
      registers,
    }),
    duration: new Histogram({
      name: 'rtb_webhook_request_duration_seconds',
      help: 'Time to answer an admission request, by result.',
      labelNames: ['result'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    mutations: new Counter({
      name: 'rtb_webhook_mutations_total',
      help: 'Pods changed, by feature.',
      labelNames: ['feature'],
      registers,
    }),
    configReloads: new Counter({
      name: 'rtb_webhook_config_reloads_total',
      help: 'Configuration texts taken into force or refused, each text counted once however often it is read again (failure: refused, the last good one stays in force).',
      labelNames: ['result'],
      registers,
    }),
    configGeneration: new Gauge({
      name: 'rtb_webhook_config_generation',
      help: 'How many configurations have been accepted since start.',
      registers,
    }),
    configRefused: new Gauge({
      name: 'rtb_webhook_config_refused',
      help: 'Whether the latest configuration text read was refused (1): the last good one, if any, stays in force until a valid text comes.',
      registers,
    }),
    servingCertificateExpiry: new Gauge({
      name: 'rtb_webhook_serving_certificate_expiration_timestamp_seconds',
      help: 'Unix time the serving certificate this replica serves now expires.',
      registers,
    }),
    pullSecretCopies: new Counter({
      name: 'rtb_webhook_pull_secret_copies_total',
      help: 'Writes of pull Secret copies into namespaces, by result.',
      labelNames: ['result'],
      registers,
    }),
    pullSecretMissing: new Counter({
      name: 'rtb_webhook_pull_secret_source_missing_total',
      help: 'Pods that asked for the pull Secret while its source did not exist (no reference added).',
      registers,
    }),
    certReloads: new Counter({
      name: 'rtb_webhook_certificate_reloads_total',
      help: 'Reloads of the serving certificate, by result.',
      labelNames: ['result'],
      registers,
    }),
    refused: new Counter({
      name: 'rtb_webhook_requests_refused_total',
      help: 'Requests turned away to keep memory bounded: body too large (413), too complex to decode (413), too many waiting or no room in time (503), client gone while waiting.',
      labelNames: ['reason'],
      registers,
    }),
    trustBundleSkipped: new Counter({
      name: 'rtb_webhook_trust_bundle_skipped_total',
      help: 'Pods that asked for the trust bundle and got no mount because the runtime cannot take it: it serves no ClusterTrustBundle API (api_not_served), its API server drops the projected source (projection_dropped), or the kubelet of some node cannot read the version served (kubelet_too_old).',
      labelNames: ['reason'],
      registers,
    }),
  };
}
