// The webhook's part of a rollout in the fleet benchmark, where no webhook runs: per pool server,
// the product's own reporter (src/webhook/status-reporter.ts) fed with the set version the
// server's objects name (src/api/set-version.ts: the config ConfigMap, the pull Secret and the
// trust bundle, each followed by a watch), so the status ConfigMap says that set is loaded, as a
// webhook that takes every set would, with the trust-bundle finding its probe would make. The
// controller reads it to tell a runtime healthy at a revision and whether the projection is kept.
import type { KubernetesObject } from '@kubernetes/client-node';
import { CONTENT_VERSION_ANNOTATION, runtimeSetVersion } from '../../src/api/set-version.js';
import { CONFIG_MAP_NAME } from '../../src/api/webhook-features.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { createListerWatcher } from '../../src/kube/list-watch.js';
import { Reflector } from '../../src/kube/reflector.js';
import { TrustBundleListWatch } from '../../src/kube/trust-bundle-list-watch.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { WebhookStatusReporter } from '../../src/webhook/status-reporter.js';
import { CTB_NAME, KCP_PULL_SECRET } from '../../test/support/kcp.js';

/** Running reporters; `stop` ends their watches. */
export interface WebhookReports {
  stop(): Promise<void>;
}

/** Starts a reporter on each of `servers`; resolves once each has read its objects. */
export async function startWebhookReports(servers: readonly LocalCluster[]): Promise<WebhookReports> {
  const logger = silentLogger();
  const reflectors: Reflector<KubernetesObject>[] = [];
  const reporters: WebhookStatusReporter[] = [];
  for (const server of servers) {
    const access = server.kubeConfig();
    const reporter = new WebhookStatusReporter(
      access,
      { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
      logger,
    );
    const follow = (name: string, path: string, bundle = false): Reflector<KubernetesObject> => {
      const reflector = new Reflector<KubernetesObject>({
        name: `bench ${name} ${server.name}`,
        listerWatcher: bundle
          ? new TrustBundleListWatch<KubernetesObject>(access)
          : createListerWatcher<KubernetesObject>(access, path),
        fieldSelector: `metadata.name=${name}`,
        handlers: { onAdd: report, onUpdate: report, onDelete: report },
      });
      reflectors.push(reflector);
      return reflector;
    };
    const namespaced = `/api/v1/namespaces/${RUNTIME_NAMESPACE}`;
    const config = follow(CONFIG_MAP_NAME, `${namespaced}/configmaps`);
    const secret = follow(KCP_PULL_SECRET, `${namespaced}/secrets`);
    const bundle = follow(CTB_NAME, '', true);
    const only = (r: Reflector<KubernetesObject>): KubernetesObject | undefined => r.store.list()[0];
    function report(): void {
      const cm = only(config);
      if (cm === undefined) return;
      reporter.offered(
        runtimeSetVersion({
          configMap: cm.metadata?.annotations,
          pullSecret: only(secret)?.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION],
          trustBundle: only(bundle)?.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION],
        }),
        { accepted: true },
      );
    }
    // A webhook's probe finds the bundle API served and the projection kept on these servers.
    reporter.trustBundle({ api: 'certificates.k8s.io/v1', projection: 'kept' });
    reporters.push(reporter);
  }
  for (const r of reflectors) r.start();
  await Promise.all(reflectors.map((r) => r.waitForSync()));
  return {
    async stop() {
      for (const r of reporters) r.stop();
      await Promise.all(reflectors.map((r) => r.stop()));
    },
  };
}
