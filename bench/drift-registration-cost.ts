// What the drift registration costs a runtime's API server per write of ours: one kube-apiserver,
// the labelled pull Secret applied as the KCP's user under our field manager (a rotation's write), in rounds without
// any registration (the baseline), with the drift ValidatingWebhookConfiguration as rendered
// without its matchConditions, and as rendered. The webhook's Service has no endpoints, as in the
// fleet benchmark (`bench/fleet-scale.ts`): a call that is made fails open. Prints figures;
// asserts nothing.
//
//   npx tsx bench/drift-registration-cost.ts      (BENCH_WRITES per round, default 2000)
import type { V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { FIELD_MANAGER, RUNTIME_NAMESPACE, WEBHOOK_SERVICE } from '../src/api/runtime-names.js';
import { RuntimeIdentities } from '../src/controller/direct/runtime-identity.js';
import { ControlPlane } from '../src/envtest/control-plane.js';
import { liteFromDocument } from '../src/kube/cluster-access.js';
import { objectPath } from '../src/kube/resource-path.js';
import { renderDriftWebhookConfiguration } from '../src/render/webhook-registration.js';
import { envIntegers, say } from './support/env.js';
import { KeepAliveClient } from './support/keep-alive-client.js';
import { cpuSeconds } from './support/proc.js';
import { median } from './support/stats.js';
import { managedPullSecret } from '../test/support/managed-pull-secret.js';

const [writes = 2000] = envIntegers('BENCH_WRITES', [2000]);
const PARALLEL = 8;
const ROUNDS = 3;

const plane = await ControlPlane.start();
try {
  const cluster = plane.cluster('cluster-0');
  const pid = cluster.pid;
  if (pid === undefined) throw new Error('the kube-apiserver does not run');
  const access = liteFromDocument(parse(cluster.kubeconfig), plane.dir);
  if (!access) throw new Error('the admin kubeconfig is not a plain one');
  const client = await KeepAliveClient.create(access, PARALLEL);
  await client.request('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: RUNTIME_NAMESPACE },
  });
  await client.request('POST', `/api/v1/namespaces/${RUNTIME_NAMESPACE}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: WEBHOOK_SERVICE, namespace: RUNTIME_NAMESPACE },
    spec: { ports: [{ port: 443, targetPort: 9443 }], selector: { app: 'none' } },
  });
  let serial = 0;
  /** The API server's CPU per write (ms), median of the rounds, and the writes' rate. */
  const measure = async (): Promise<{ cpuMs: number; perSecond: number }> => {
    const cpu: number[] = [];
    const rate: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const before = cpuSeconds(pid);
      const started = performance.now();
      let sent = 0;
      const worker = async (): Promise<void> => {
        while (sent < writes) {
          sent++;
          const o = managedPullSecret(`v${serial++}`);
          await client.request(
            'PATCH',
            `${objectPath(o)}?fieldManager=${FIELD_MANAGER}&force=true`,
            o,
            'application/apply-patch+yaml',
          );
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      cpu.push(((cpuSeconds(pid) - before) * 1000) / writes);
      rate.push(writes / ((performance.now() - started) / 1000));
    }
    return { cpuMs: median(cpu), perSecond: median(rate) };
  };
  const register = async (vwc: V1ValidatingWebhookConfiguration): Promise<void> => {
    await client.request(
      'PATCH',
      `${objectPath(vwc)}?fieldManager=${FIELD_MANAGER}&force=true`,
      vwc,
      'application/apply-patch+yaml',
    );
    // The API server's informer takes a moment to see a registration.
    await new Promise((r) => setTimeout(r, 2_000));
  };
  // Skipping the writes of the user the bench writes as, as direct mode renders it for its own.
  const rendered = renderDriftWebhookConfiguration(
    { image: 'bench', driftSkipUsername: await new RuntimeIdentities().usernameOf(cluster.kubeConfig()) },
    RUNTIME_NAMESPACE,
  );
  const unconditioned = structuredClone(rendered);
  for (const w of unconditioned.webhooks ?? []) delete w.matchConditions;
  await measure(); // warm-up
  const baseline = await measure();
  say(
    `drift registration's cost, ${writes} applies of the labelled pull Secret per round under ${FIELD_MANAGER}, ` +
      `${PARALLEL} at a time, median of ${ROUNDS} rounds (kube-apiserver ${plane.kubernetes})`,
  );
  const line = (label: string, m: { cpuMs: number; perSecond: number }): void => {
    say(
      `  ${label}: API server CPU ${m.cpuMs.toFixed(2)} ms per write (${(m.cpuMs / baseline.cpuMs).toFixed(2)}× the baseline), ${m.perSecond.toFixed(0)} writes/s`,
    );
  };
  line('baseline, no registration', baseline);
  await register(unconditioned);
  line('the registration without its matchConditions', await measure());
  await register(rendered);
  line('the registration as rendered', await measure());
  client.disconnect();
} finally {
  await plane.stop();
}
