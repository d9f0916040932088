import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { counterOn, gaugeOn, histogramOn } from '../telemetry/prom-metrics.js';

/** How one POST to the listener ended, the `result` label of the sends counter. */
export type SendResult =
  'success' | 'throttled' | 'server_error' | 'rejected' | 'network_error' | 'no_tls_material';

/** Why an event was given up, the `reason` label of the dropped counter. */
export type DropReason = 'queue_full' | 'max_attempts' | 'rejected' | 'stopped';

/**
 * The drift forwarder's metrics. Labels are closed sets: no object names, no runtime IDs and
 * nothing from a certificate.
 */
export interface ForwarderMetrics {
  readonly sends: Counter<'result'>;
  readonly retries: Counter;
  readonly dropped: Counter<'reason'>;
  readonly deduplicated: Counter;
  readonly queueDepth: Gauge;
  readonly delivery: Histogram;
  readonly tlsReloads: Counter<'result'>;
}

/** Registers (or finds, when a second forwarder shares the registry) the forwarder metrics. */
export function createForwarderMetrics(registry: Registry): ForwarderMetrics {
  return {
    sends: counterOn(registry, {
      name: 'rtb_drift_forwarder_sends_total',
      help: 'POSTs of drift events to the KCP listener, by result.',
      labelNames: ['result'],
    }),
    retries: counterOn(registry, {
      name: 'rtb_drift_forwarder_retries_total',
      help: 'Drift events scheduled for another attempt after a failed one.',
      labelNames: [],
    }),
    dropped: counterOn(registry, {
      name: 'rtb_drift_forwarder_dropped_total',
      help: 'Drift events given up, by reason.',
      labelNames: ['reason'],
    }),
    deduplicated: counterOn(registry, {
      name: 'rtb_drift_forwarder_deduplicated_total',
      help: 'Drift events merged into an identical one still waiting to be sent.',
      labelNames: [],
    }),
    queueDepth: gaugeOn(registry, {
      name: 'rtb_drift_forwarder_queue_depth',
      help: 'Drift events not yet delivered (waiting or in flight).',
      labelNames: [],
    }),
    delivery: histogramOn(registry, {
      name: 'rtb_drift_forwarder_delivery_seconds',
      help: 'Time from the admission request to the listener accepting the event, retries included.',
      labelNames: [],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    }),
    tlsReloads: counterOn(registry, {
      name: 'rtb_drift_forwarder_tls_reloads_total',
      help: 'Loads of the client certificate, key and CA from their files, by result.',
      labelNames: ['result'],
    }),
  };
}
