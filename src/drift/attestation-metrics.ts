import type { Counter, Gauge, Registry } from 'prom-client';
import { counterOn, gaugeOn } from '../telemetry/prom-metrics.js';

/** How one attestation ended, the `result` label of {@link AttestationMetrics.attestations}. */
export type AttestationResult = 'in_sync' | 'out_of_sync' | 'failed';

/** The runtime attestor's metrics (closed label sets: nothing from objects or certificates). */
export interface AttestationMetrics {
  readonly attestations: Counter<'result'>;
  readonly lastSuccess: Gauge;
}

/** Registers (or finds, when shared) the attestor's metrics on `registry`. */
export function createAttestationMetrics(registry: Registry): AttestationMetrics {
  return {
    attestations: counterOn(registry, {
      name: 'rtb_attestations_total',
      help: 'Attestations sent to the KCP listener, by result (in_sync, out_of_sync as the KCP answered; failed).',
      labelNames: ['result'],
    }),
    lastSuccess: gaugeOn(registry, {
      name: 'rtb_attestation_last_success_timestamp_seconds',
      help: 'When the KCP listener last answered an attestation (Unix time, seconds).',
      labelNames: [],
    }),
  };
}
