/**
 * KIM installs our release over a running upstream install on a real node, as its installer code
 * does, while Pods are created through the API server every 300 ms from before our manifests are
 * applied until our rollout is complete (upstream's last Pod being deleted): every Pod is
 * admitted, mutated exactly once, none twice, and the API server never fails open.
 * Upstream's install and the witness Pods: ./support/upstream-stand-in.ts.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { renderKimManifests } from '../../src/render/kim-manifests.js';
import { packageVersion } from '../../src/version.js';
import { kimInstall, kimStatus } from '../support/kim-installer.js';
import { useNodeLandscape } from './support/node-landscape.js';
import { POD_READY_MS } from './support/pods.js';
import {
  installUpstreamStandIn,
  TakeoverWatch,
  webhookCallFailures,
  WitnessPods,
} from './support/upstream-stand-in.js';
import { e2eSources, webhookAvailable } from './support/webhook-on-node.js';

let upstreamCaPem = '';
const landscape = useNodeLandscape(async (l) => {
  upstreamCaPem = await installUpstreamStandIn(l, (await e2eSources(l)).sources);
});

test('KIM installs our release over a serving upstream install: no Pod unmutated, none mutated twice, no call failed open', async (t) => {
  const l = landscape();
  const cluster = l.plane.cluster('runtime');
  const kc = cluster.kubeConfig();
  const watch = new TakeoverWatch(cluster, upstreamCaPem);
  assert.ok(await watch.upstreamServes(), "upstream's stand-in serves");
  const failedOpenBefore = await watch.failedOpen();

  // Pods from before our manifests until our rollout is complete (the window the rule is for).
  const witness = new WitnessPods(kc.makeApiClient(CoreV1Api));
  let early: string[];
  let failedOpenAtRollout = 0;
  const rolledOut = async (): Promise<void> => {
    await witness.stop();
    failedOpenAtRollout = await watch.failedOpen();
  };
  const ours = renderKimManifests({ image: l.openImage, version: packageVersion() }).text;
  try {
    await sleep(3_000);
    await kimInstall(kc, ours);
    early = await watch.untilTakenOver(POD_READY_MS * 2, witness, rolledOut);
    await webhookAvailable(kc);
    assert.equal(await kimStatus(kc, ours), 'Ready');
  } finally {
    await witness.stop();
  }
  const pods = await witness.stop();
  t.diagnostic(`${pods.count} Pods, ${pods.whileUpstream} while upstream's Pod served`);
  if (pods.problems.length > 0) t.diagnostic(await webhookCallFailures(cluster.dir));
  assert.deepEqual(early, [], "upstream's CA never left while its Pod could serve");
  assert.deepEqual(pods.problems, [], 'every Pod admitted and mutated exactly once');
  assert.ok(pods.whileUpstream >= 10, 'Pods were created while upstream served');
  assert.equal(failedOpenAtRollout - failedOpenBefore, 0, 'the API server never failed open');
});
