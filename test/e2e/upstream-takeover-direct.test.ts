/**
 * Direct mode takes over a running upstream install on a real node: the KCP (an API server of
 * its own beside the runtime) installs our release over it, writes the serving certificate from
 * its CA and the caBundle, while Pods are created through the runtime's API server every 300 ms
 * from before the RuntimeBootstrapper exists until our rollout is complete (upstream's last Pod
 * being deleted): every Pod is admitted, mutated exactly once, none twice, and the API server
 * never fails open; upstream's CA stays in the caBundle until its last Pod is gone. Upstream's install and the witness Pods: ./support/upstream-stand-in.ts.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { startDirectMode } from '../../src/controller/direct/direct-mode.js';
import type { DirectMode } from '../../src/controller/direct/direct-mode-options.js';
import type { SourceWatcher } from '../../src/controller/sources/source-watcher.js';
import { eventually } from '../../src/envtest/eventually.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { parseCertificates } from '../../src/pki/pem-certificates.js';
import { KCP_SERVING_POLICY } from '../../src/serving-cert/serving-policy.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { packageVersion } from '../../src/version.js';
import {
  createRuntimeBootstrapper,
  directModeOptions,
  prepareKcp,
  putAdminKubeconfigSecret,
  RB_PATH,
  startKcpSources,
} from '../support/kcp.js';
import { useNodeLandscape } from './support/node-landscape.js';
import { POD_READY_MS } from './support/pods.js';
import { installUpstreamStandIn, TakeoverWatch, WitnessPods } from './support/upstream-stand-in.js';
import { e2eSources } from './support/webhook-on-node.js';

let upstreamCaPem = '';
let sources: SourceWatcher | undefined;
let direct: DirectMode | undefined;
const landscape = useNodeLandscape(
  async (l) => {
    upstreamCaPem = await installUpstreamStandIn(l, (await e2eSources(l)).sources);
    const kcp = l.plane.cluster('kcp');
    await prepareKcp(kcp);
    await putAdminKubeconfigSecret(kcp, l.plane.cluster('runtime'), 'runtime');
    sources = await startKcpSources(kcp, silentLogger());
  },
  'runtime',
  ['kcp'],
);
after(async () => {
  await direct?.stop();
  await sources?.stop();
});

test('direct mode installs our release over a serving upstream install: no Pod unmutated, none mutated twice, no call failed open', async (t) => {
  const l = landscape();
  const runtime = l.plane.cluster('runtime');
  const kcp = l.plane.cluster('kcp');
  const watch = new TakeoverWatch(runtime, upstreamCaPem);
  assert.ok(await watch.upstreamServes(), "upstream's stand-in serves");
  const failedOpenBefore = await watch.failedOpen();
  if (!sources) throw new Error('the KCP sources did not start');

  // Pods from before our manifests until our rollout is complete (the window the rule is for).
  const witness = new WitnessPods(runtime.kubeConfig().makeApiClient(CoreV1Api));
  let early: string[];
  let failedOpenAtRollout = 0;
  const rolledOut = async (): Promise<void> => {
    await witness.stop();
    failedOpenAtRollout = await watch.failedOpen();
  };
  try {
    await sleep(3_000);
    direct = await startDirectMode(
      directModeOptions(kcp, sources, silentLogger(), {
        release: { image: l.openImage, version: packageVersion() },
        servingPolicy: { ...KCP_SERVING_POLICY, settleMs: 5_000 },
      }),
    );
    await createRuntimeBootstrapper(kcp, 'runtime');
    early = await watch.untilTakenOver(POD_READY_MS * 2, witness, rolledOut);
    await eventually(
      async () => {
        const rb = await kubeRequest<RuntimeBootstrapper>(kcp.kubeConfig(), {
          method: 'GET',
          path: `${RB_PATH}/runtime`,
        });
        return rb.status?.state === 'Ready' ? rb : undefined;
      },
      POD_READY_MS,
      'the RuntimeBootstrapper Ready',
    );
  } finally {
    await witness.stop();
  }
  const pods = await witness.stop();
  t.diagnostic(`${pods.count} Pods, ${pods.whileUpstream} while upstream's Pod served`);
  assert.deepEqual(early, [], "upstream's CA never left while its Pod could serve");
  assert.deepEqual(pods.problems, [], 'every Pod admitted and mutated exactly once');
  assert.ok(pods.whileUpstream >= 10, 'Pods were created while upstream served');
  assert.equal(failedOpenAtRollout - failedOpenBefore, 0, 'the API server never failed open');
  const kcpCa = parseCertificates(direct.cas.current().certPem).certificates.map((c) => c.fingerprint);
  assert.deepEqual((await watch.bundle()).fingerprints, kcpCa, "the caBundle holds the KCP's CA alone");
});
