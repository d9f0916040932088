import type {
  V1NetworkPolicy,
  V1NetworkPolicyIngressRule,
  V1NetworkPolicyPeer,
  V1NetworkPolicyPort,
} from '@kubernetes/client-node';
import {
  APP_NAME,
  APP_NAME_LABEL,
  METRICS_SCRAPER_LABEL,
  NETWORK_POLICY_API_SERVER_EGRESS,
  NETWORK_POLICY_DRIFT_EGRESS,
  NETWORK_POLICY_METRICS_INGRESS,
  NETWORK_POLICY_WEBHOOK_INGRESS,
  WEBHOOK_METRICS_PORT,
  WEBHOOK_PORT,
} from '../api/runtime-names.js';
import { objectLabels, type WebhookManifestOptions } from './webhook-options.js';

/** The webhook's NetworkPolicies, in apply order. */
export interface WebhookNetworkPolicies {
  readonly webhookIngress: V1NetworkPolicy;
  readonly metricsIngress: V1NetworkPolicy;
  readonly apiServerEgress: V1NetworkPolicy;
  /** Present when the drift channel is enabled. */
  readonly driftEgress?: V1NetworkPolicy;
}

const tcp = (port: number): V1NetworkPolicyPort => ({ port, protocol: 'TCP' });

/**
 * An ingress rule admitting `peers`. client-node's model calls the field `_from` (its serializer
 * renames it); these objects are written as plain JSON and YAML, where it must be `from`.
 */
function fromPeers(peers: V1NetworkPolicyPeer[], ports: V1NetworkPolicyPort[]): V1NetworkPolicyIngressRule {
  return { from: peers, ports } as unknown as V1NetworkPolicyIngressRule;
}

/** The port of an `https://host[:port]` URL (443 for one that does not parse: the forwarder refuses it at start). */
function portOf(url: string): number {
  if (!URL.canParse(url)) return 443;
  const port = new URL(url).port;
  return port === '' ? 443 : Number.parseInt(port, 10);
}

/**
 * The webhook's NetworkPolicies (pure), as upstream ships them (its config/network-policy/, same
 * names, same Pod selector and rules), so only the API server and scrapers reach the Pods under
 * a default-deny policy: ingress to the webhook port from anywhere (the API server's source
 * address is not known in advance), the metrics port only from Pods of the webhook's namespace
 * labelled as scrapers, egress to port 443 (the API server; upstream's, which also covers a KCP
 * listener on 443). With the drift channel, a policy of ours adds the listener's port and DNS
 * (the listener is named by host; the API server is reached by address).
 */
export function renderWebhookNetworkPolicies(
  o: WebhookManifestOptions,
  namespace: string,
): WebhookNetworkPolicies {
  // Upstream's selector: its label alone, which our Pods carry too (./webhook-deployment.ts).
  const podSelector = { matchLabels: { [APP_NAME_LABEL]: APP_NAME } };
  const policy = (
    name: string,
    spec: Omit<NonNullable<V1NetworkPolicy['spec']>, 'podSelector'>,
    labels: Record<string, string> = {},
  ): V1NetworkPolicy => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace, labels: { ...objectLabels(o), ...labels } },
    spec: { podSelector, ...spec },
  });
  const drift = o.driftListenerUrl;
  return {
    webhookIngress: policy(NETWORK_POLICY_WEBHOOK_INGRESS, {
      policyTypes: ['Ingress'],
      ingress: [{ ports: [tcp(WEBHOOK_PORT)] }],
    }),
    metricsIngress: policy(NETWORK_POLICY_METRICS_INGRESS, {
      policyTypes: ['Ingress'],
      ingress: [
        fromPeers(
          [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
              podSelector: { matchLabels: { [METRICS_SCRAPER_LABEL]: 'allowed' } },
            },
          ],
          [tcp(WEBHOOK_METRICS_PORT)],
        ),
      ],
    }),
    apiServerEgress: policy(
      NETWORK_POLICY_API_SERVER_EGRESS,
      { policyTypes: ['Egress'], egress: [{ ports: [tcp(443)] }] },
      // Upstream's label, kept so an apply over its object changes nothing there.
      { purpose: 'apiserver' },
    ),
    driftEgress: drift
      ? policy(NETWORK_POLICY_DRIFT_EGRESS, {
          policyTypes: ['Egress'],
          egress: [{ ports: [tcp(portOf(drift))] }, { ports: [{ port: 53, protocol: 'UDP' }, tcp(53)] }],
        })
      : undefined,
  };
}

/** The policies as a list in apply order. */
export function networkPolicyList(p: WebhookNetworkPolicies): readonly V1NetworkPolicy[] {
  return [p.webhookIngress, p.metricsIngress, p.apiServerEgress, ...(p.driftEgress ? [p.driftEgress] : [])];
}
