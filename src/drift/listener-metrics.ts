import type { Counter, Histogram, Registry } from 'prom-client';
import { counterOn, histogramOn } from '../telemetry/prom-metrics.js';

/** The `kind` label of accepted events: the kinds we manage, anything else as `other`. */
export type AcceptedKind = 'Secret' | 'ConfigMap' | 'ClusterTrustBundle' | 'other';

/**
 * The drift listener's metrics, after the Runtime Watcher listener's. Labels are closed sets:
 * no runtime IDs (thousands of series), nothing from a certificate.
 */
export interface ListenerMetrics {
  readonly requests: Counter<'code'>;
  readonly duration: Histogram<'code'>;
  readonly rejectedVerifications: Counter<'reason'>;
  readonly eventsAccepted: Counter<'kind'>;
  readonly tlsHandshakeFailures: Counter;
}

/** Registers (or finds) the listener metrics on `registry`. */
export function createListenerMetrics(registry: Registry): ListenerMetrics {
  return {
    requests: counterOn(registry, {
      name: 'rtb_drift_listener_requests_total',
      help: 'HTTP requests to the drift listener, by status code.',
      labelNames: ['code'],
    }),
    duration: histogramOn(registry, {
      name: 'rtb_drift_listener_request_duration_seconds',
      help: 'Time to answer a drift listener request, by status code.',
      labelNames: ['code'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    }),
    rejectedVerifications: counterOn(registry, {
      name: 'rtb_drift_listener_rejected_verifications_total',
      help: 'Requests with a certificate of our CA that failed runtime verification, by reason.',
      labelNames: ['reason'],
    }),
    eventsAccepted: counterOn(registry, {
      name: 'rtb_drift_listener_events_accepted_total',
      help: 'Drift events accepted and handed on, by object kind.',
      labelNames: ['kind'],
    }),
    tlsHandshakeFailures: counterOn(registry, {
      name: 'rtb_drift_listener_tls_handshake_failures_total',
      help: 'Connections refused or failed during the TLS handshake (e.g. a certificate of another CA).',
      labelNames: [],
    }),
  };
}

/** Maps an event's kind onto the closed label set. */
export function acceptedKind(kind: string): AcceptedKind {
  return kind === 'Secret' || kind === 'ConfigMap' || kind === 'ClusterTrustBundle' ? kind : 'other';
}
