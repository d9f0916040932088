// The webhook's part of a rollout in the fleet benchmark, where no webhook runs: per pool server,
// the product's own reporter (src/webhook/status-reporter.ts) fed by a watch of the config
// ConfigMap, so the status ConfigMap says the set the ConfigMap holds is loaded, as a webhook
// that takes every set would. The controller reads it to tell a runtime healthy at a revision.
import type { V1ConfigMap } from '@kubernetes/client-node';
import { CONFIG_MAP_NAME } from '../../src/api/webhook-features.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { createListerWatcher } from '../../src/kube/list-watch.js';
import { Reflector } from '../../src/kube/reflector.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { WebhookStatusReporter } from '../../src/webhook/status-reporter.js';

/** Running reporters; `stop` ends their watches. */
export interface WebhookReports {
  stop(): Promise<void>;
}

/** Starts a reporter on each of `servers`; resolves once each has read its ConfigMap. */
export async function startWebhookReports(servers: readonly LocalCluster[]): Promise<WebhookReports> {
  const logger = silentLogger();
  const running: { reflector: Reflector<V1ConfigMap>; reporter: WebhookStatusReporter }[] = [];
  for (const server of servers) {
    const access = server.kubeConfig();
    const reporter = new WebhookStatusReporter(
      access,
      { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
      logger,
    );
    const offer = (cm: V1ConfigMap): void => {
      reporter.offered(cm.metadata?.annotations, { accepted: true });
    };
    const reflector = new Reflector<V1ConfigMap>({
      name: `bench config ${server.name}`,
      listerWatcher: createListerWatcher<V1ConfigMap>(
        access,
        `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps`,
      ),
      fieldSelector: `metadata.name=${CONFIG_MAP_NAME}`,
      handlers: {
        onAdd: offer,
        onUpdate: (_old, cm) => {
          offer(cm);
        },
      },
    });
    reflector.start();
    running.push({ reflector, reporter });
  }
  await Promise.all(running.map((r) => r.reflector.waitForSync()));
  return {
    async stop() {
      for (const r of running) r.reporter.stop();
      await Promise.all(running.map((r) => r.reflector.stop()));
    },
  };
}
