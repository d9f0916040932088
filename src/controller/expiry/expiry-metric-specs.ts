/**
 * Names, help and labels of the KCP controller's expiry metrics and of the opt-in per-runtime
 * metrics (DESIGN.md §12): the collectors register these, and the dashboards and alerts
 * (src/monitoring) read the names from here.
 */
import type { MetricSpec } from '../../telemetry/prom-metrics.js';

/** Drift client certificates expiring within this are counted as expiring soon. */
export const EXPIRING_SOON_SECONDS = 14 * 24 * 3600;

/** The KCP's CA, which signs drift client certificates, the listener's and the runtimes' serving certificates. */
export const KCP_CA_EXPIRY: MetricSpec<never> = {
  name: 'rtb_kcp_ca_expiration_timestamp_seconds',
  help: "Unix time the KCP's CA expires (it signs the drift client certificates, the drift listener's and the runtimes' webhook serving certificates).",
  labelNames: [],
};

/** The drift listener's serving certificate. */
export const DRIFT_LISTENER_CERT_EXPIRY: MetricSpec<never> = {
  name: 'rtb_drift_listener_certificate_expiration_timestamp_seconds',
  help: "Unix time the drift listener's serving certificate expires.",
  labelNames: [],
};

/** The earliest drift client certificate per RuntimeBootstrapper state. */
export const DRIFT_CLIENT_CERT_EXPIRY: MetricSpec<'state'> = {
  name: 'rtb_drift_client_certificate_expiration_timestamp_seconds',
  help: "Unix time the earliest runtime drift client certificate expires, by the runtime's state (runtimes this replica works).",
  labelNames: ['state'],
};

/** Drift client certificates expiring within {@link EXPIRING_SOON_SECONDS}, per state. */
export const DRIFT_CLIENT_CERTS_EXPIRING: MetricSpec<'state'> = {
  name: 'rtb_drift_client_certificates_expiring_soon',
  help: "Runtime drift client certificates that expire within 14 days, by the runtime's state (they are renewed 30 days ahead by default).",
  labelNames: ['state'],
};

/** Since when the runtime longest not Ready has been so. */
export const NOT_READY_SINCE: MetricSpec<never> = {
  name: 'rtb_runtimes_not_ready_since_timestamp_seconds',
  help: 'Unix time since which the RuntimeBootstrapper longest not Ready (Paused ones aside) has been so, as this replica saw it; absent while all are Ready.',
  labelNames: [],
};

/** The earliest notAfter in the landscape's ClusterTrustBundle. */
export const TRUST_BUNDLE_EXPIRY: MetricSpec<never> = {
  name: 'rtb_trust_bundle_expiration_timestamp_seconds',
  help: "Unix time the first CA certificate in the landscape's ClusterTrustBundle expires (the KCP source).",
  labelNames: [],
};

/** When the landscape's pull Secret last changed. */
export const PULL_SECRET_LAST_CHANGE: MetricSpec<never> = {
  name: 'rtb_pull_secret_last_change_timestamp_seconds',
  help: "Unix time the landscape's pull Secret on the KCP was last written (its latest managedFields time, else its creation).",
  labelNames: [],
};

/** The runtimes this replica works, by how Pods are mutated there (DESIGN.md §13). */
export const RUNTIMES_BY_ADMISSION_PATH: MetricSpec<'path'> = {
  name: 'rtb_runtimes_admission_path',
  help: 'Runtimes this replica works, by admission path: policy (our MutatingAdmissionPolicy mutates Pods inside the API server, the webhook stays registered) or webhook (the webhook alone, failing open when it cannot answer).',
  labelNames: ['path'],
};

/** Opt-in (`--per-runtime-metrics`): each runtime's state, value 1. */
export const RUNTIME_STATE: MetricSpec<'runtime_id' | 'state'> = {
  name: 'rtb_runtime_state',
  help: 'Each RuntimeBootstrapper this replica works, by runtime ID, with its state as a label (value 1). Opt-in: one series per runtime.',
  labelNames: ['runtime_id', 'state'],
};

/** Opt-in (`--per-runtime-metrics`): each runtime's drift client certificate. */
export const RUNTIME_DRIFT_CLIENT_CERT_EXPIRY: MetricSpec<'runtime_id'> = {
  name: 'rtb_runtime_drift_client_certificate_expiration_timestamp_seconds',
  help: "Unix time each runtime's drift client certificate expires, by runtime ID. Opt-in: one series per runtime.",
  labelNames: ['runtime_id'],
};
