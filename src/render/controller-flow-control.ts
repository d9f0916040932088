import type { V1FlowSchema, V1PriorityLevelConfiguration } from '@kubernetes/client-node';

/**
 * Where the controller's requests stand in the KCP's API Priority and Fairness. A fan-out to
 * thousands of runtimes writes a status per runtime to the KCP (about 170 a second to reach
 * 5,000 runtimes in 30 s); without a schema of its own the controller's ServiceAccount lands in
 * `service-accounts` (priority level `workload-low`) and queues behind every other workload
 * there, or crowds it out. Its own priority level gives it a share of its own, lending half of
 * it while idle.
 */
export interface ControllerFlowControl {
  readonly priorityLevel: V1PriorityLevelConfiguration;
  readonly flowSchema: V1FlowSchema;
}

/**
 * Before `service-accounts` (9000) and `global-default` (9900), after the system's own schemas
 * (`system-leader-election` 100 … `kube-system-service-accounts` 900).
 */
export const CONTROLLER_FLOW_PRECEDENCE = 1000;
/** Like `workload-high` is 40 and `global-default` 20: a share for one busy client of the KCP. */
export const CONTROLLER_CONCURRENCY_SHARES = 20;

/** The PriorityLevelConfiguration and FlowSchema of the controller's ServiceAccount (pure). */
export function renderControllerFlowControl(o: {
  readonly name: string;
  readonly serviceAccount: { readonly name: string; readonly namespace: string };
  readonly labels: Readonly<Record<string, string>>;
}): ControllerFlowControl {
  const metadata = (): { name: string; labels: Record<string, string> } => ({
    name: o.name,
    labels: { ...o.labels },
  });
  return {
    priorityLevel: {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'PriorityLevelConfiguration',
      metadata: metadata(),
      spec: {
        type: 'Limited',
        limited: {
          nominalConcurrencyShares: CONTROLLER_CONCURRENCY_SHARES,
          lendablePercent: 50,
          limitResponse: {
            type: 'Queue',
            queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 },
          },
        },
      },
    },
    flowSchema: {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: metadata(),
      spec: {
        priorityLevelConfiguration: { name: o.name },
        matchingPrecedence: CONTROLLER_FLOW_PRECEDENCE,
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [
              {
                kind: 'ServiceAccount',
                serviceAccount: { name: o.serviceAccount.name, namespace: o.serviceAccount.namespace },
              },
            ],
            resourceRules: [
              {
                verbs: ['*'],
                apiGroups: ['*'],
                resources: ['*'],
                namespaces: ['*'],
                clusterScope: true,
              },
            ],
            nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
          },
        ],
      },
    },
  };
}
