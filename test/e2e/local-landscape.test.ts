/**
 * `npm start` (`rtb local`) on a host that runs nodes: the webhook of each runtime runs as Pods
 * from the rtb image (installed by the controller in direct mode), the seed Pod runs with its
 * image from the secured registry, and the trust bundle is read from inside its container.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { isRunning } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { runLocal } from '../support/run-local.js';

/** PIDs whose command line names `dir` (etcd, API servers, kubelets, containerd, shims, registries). */
function processesUsing(dir: string): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

const count = (text: string, re: RegExp): number => text.match(new RegExp(re.source, 'g'))?.length ?? 0;

/** How often a node says it pulled the seed Pod's pause image from `registry`. */
const pausePulls = (out: string, registry: string): number =>
  count(
    out,
    new RegExp(
      `Running on runtime-\\d-node: Successfully pulled image "${registry}/kyma-project/rt-bootstrapper/pause:e2e"`,
    ),
  );

describe('rtb local with the webhooks on nodes', () => {
  test('--once --webhooks node: webhook Pods, the seed Pod running from the secured registry, the bundle read inside it', async () => {
    const run = await runLocal(['--once', '--webhooks', 'node']);
    assert.equal(run.code, 0, run.out);
    const out = run.out;
    assert.match(out, /^webhooks: Pods from the rtb image on a node per runtime/m);
    assert.match(out, /node runtime-1-node Ready in [\d.]+ s/);
    assert.match(out, /node runtime-2-node Ready in [\d.]+ s/);
    const image = /^webhook image (127\.0\.0\.1:\d+)\/rt-bootstrapper:\S+ /m.exec(out);
    assert.ok(image, out);
    const open = image[1] ?? '';
    for (const id of ['runtime-1', 'runtime-2'])
      assert.match(
        out,
        new RegExp(`RuntimeBootstrapper ${id}: Ready, config version [0-9a-f]{16}, webhook \\S+`),
      );

    // First round: replace.me → the secured registry, pulled there with the injected Secret.
    const rewrite =
      / pause: replace\.me\/kyma-project\/rt-bootstrapper\/pause:e2e → (127\.0\.0\.1:\d+)\/kyma-project/.exec(
        out,
      );
    assert.ok(rewrite, out);
    const secured = rewrite[1] ?? '';
    assert.notEqual(secured, open);
    assert.equal(pausePulls(out, secured), 2, out);
    assert.equal(count(out, /pull secret\s+imagePullSecrets \+= registry-credentials/), 4);
    // Read inside each running seed container: the bundle's PEM and the FIPS variable.
    assert.equal(
      count(
        out,
        /inside the container, \/etc\/ssl\/certs\/kube-apiserver-serving\.pem starts with: -----BEGIN CERTIFICATE-----/,
      ),
      4,
      out,
    );
    assert.equal(
      count(
        out,
        /the same PEM as ClusterTrustBundle rt-bootstrapper-k3d\.test:ctb:1\); KYMA_FIPS_MODE_ENABLED=true in its environment/,
      ),
      4,
      out,
    );
    // The figure printed is the summary's step at which the Pod ran (the look inside comes after).
    const ran = /first mutated Pod running ([\d.]+) s after this process started/.exec(out)?.[1];
    const step =
      /seed Pod Running \(its image pulled with the injected Secret\)\s+[\d.]+ s\s+([\d.]+) s/.exec(out)?.[1];
    assert.ok(ran !== undefined && step !== undefined, out);
    assert.equal(ran, step);

    // The rotation: the new mirror (the open registry) reaches both runtimes and the Pods run from it.
    assert.match(out, /runtime-1: set [0-9a-f]{16} applied \d+ ms after the change/);
    assert.match(out, /runtime-2: set [0-9a-f]{16} applied \d+ ms after the change/);
    assert.equal(pausePulls(out, open), 2, out);
    assert.match(out, /stopped\.\n$/);

    // Everything it started is gone: processes by PID and by the scratch folder they used.
    const dir = /kubeconfig: (\/\S+)\/kcp\/kubeconfig/.exec(out)?.[1];
    assert.ok(dir);
    assert.ok(
      run.pids.length >= 5,
      `etcd, API servers, kubelets and containerd were below it: ${run.pids.join(',')}`,
    );
    await eventually(() => (run.pids.some(isRunning) ? undefined : true), 20_000, 'its processes to end');
    await eventually(
      () => (processesUsing(dir).length === 0 ? true : undefined),
      20_000,
      `no process using ${dir}`,
    );
  });
});
