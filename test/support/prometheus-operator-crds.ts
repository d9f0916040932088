/**
 * The two prometheus-operator CRDs the monitoring component needs on a KCP, as far as our objects
 * use them (monitoring.coreos.com/v1 PrometheusRule and ServiceMonitor, the fields and types of
 * the operator's own schemas), so a server-side dry run checks our objects' shape.
 */
import type { KubernetesObject } from '@kubernetes/client-node';

const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
/** A Go duration, as the operator's schemas spell it. */
const duration = {
  type: 'string',
  pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$',
};
/** An object schema with its `required` members. */
const objectSchema = (required: string[], properties: Record<string, unknown>) => ({
  type: 'object',
  required,
  properties,
});

function crd(kind: string, plural: string, spec: object): KubernetesObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.monitoring.coreos.com` },
    spec: {
      group: 'monitoring.coreos.com',
      scope: 'Namespaced',
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: objectSchema(['spec'], {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec,
            }),
          },
        },
      ],
    },
  } as KubernetesObject;
}

/** PrometheusRule and ServiceMonitor. */
export function prometheusOperatorCrds(): KubernetesObject[] {
  return [
    crd('PrometheusRule', 'prometheusrules', {
      type: 'object',
      properties: {
        groups: {
          type: 'array',
          items: objectSchema(['name'], {
            name: { type: 'string', minLength: 1 },
            interval: { type: 'string' },
            rules: {
              type: 'array',
              items: objectSchema(['expr'], {
                alert: { type: 'string' },
                record: { type: 'string' },
                expr: { 'x-kubernetes-int-or-string': true },
                for: duration,
                labels: stringMap,
                annotations: stringMap,
              }),
            },
          }),
        },
      },
    }),
    crd(
      'ServiceMonitor',
      'servicemonitors',
      objectSchema(['selector'], {
        jobLabel: { type: 'string' },
        selector: {
          type: 'object',
          properties: {
            matchLabels: stringMap,
            matchExpressions: {
              type: 'array',
              items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
        namespaceSelector: {
          type: 'object',
          properties: { any: { type: 'boolean' }, matchNames: { type: 'array', items: { type: 'string' } } },
        },
        endpoints: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              port: { type: 'string' },
              targetPort: { 'x-kubernetes-int-or-string': true },
              path: { type: 'string' },
              scheme: { type: 'string', enum: ['http', 'https'] },
              interval: duration,
            },
          },
        },
      }),
    ),
  ];
}
