// A tenant's Pods as large as the API server lets them be cannot take the webhook down (issue 45,
// "lists by bytes"): 400 Pods with 250 KB annotations each (100 MB), carrying the labels that put
// them in the workload follower's and the trust restarter's lists, in a Namespace with 250 KB
// annotations of its own, and a preflight candidate whose check lists every Pod. `rtb webhook` runs
// as its own process with the rendered Deployment's heap (NODE_OPTIONS), and lists them all while
// it answers AdmissionReviews and /healthz; it does not crash. With pages of 500 whole objects, one
// page was the whole 100 MB and the process died of its heap (docs/webhook-hardening.md).
import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SET_VERSION_ANNOTATION } from '../../src/api/runtime-bootstrapper.js';
import { CTB_MOUNTED_LABEL, CTB_MOUNTED_VALUE } from '../../src/api/trust-stamp.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import {
  PREFLIGHT_CONFIG_KEY,
  PREFLIGHT_DOCKER_CONFIG_KEY,
  PREFLIGHT_KEY,
  PREFLIGHT_SECRET,
  REVISION_LABEL,
} from '../../src/api/workload-health.js';
import { eventually } from '../../src/envtest/eventually.js';
import { freePort } from '../../src/envtest/free-port.js';
import type { CertificateAuthority } from '../../src/pki/certificate-authority.js';
import { WEBHOOK_MALLOC_ENV, WEBHOOK_NODE_OPTIONS } from '../../src/render/webhook-deployment.js';
import { useControlPlane } from '../support/control-plane.js';
import { writeServingFiles } from '../support/serving-files.js';
import { putSeedConfig } from '../support/webhook-runtime.js';
import { podReview, seedPodBefore } from '../support/fixtures.js';
import { httpsCall, type Reply } from '../support/https-call.js';
import { spawnWebhookProcess } from '../support/webhook-process.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const TENANT = 'tenant-large';
const PODS = 400;
const ANNOTATION_BYTES = 250_000;
const NS = 'kyma-system';

let dir = '';
let ca: CertificateAuthority;
let certFile = '';
let keyFile = '';
let core: CoreV1Api;

/** A tenant's Pod: in both label-selected lists, with 250 KB of annotations. */
function largePod(i: number): object {
  return {
    metadata: {
      name: `large-${i}`,
      labels: { [REVISION_LABEL]: 'forged', [CTB_MOUNTED_LABEL]: CTB_MOUNTED_VALUE },
      annotations: { 'tenant.example.com/blob': String(i % 10).repeat(ANNOTATION_BYTES) },
    },
    spec: { containers: [{ name: 'app', image: `docker.io/library/app-${i % 7}:1` }] },
  };
}

/** Runs `work` over `items` with at most `n` at once. */
async function pool<T>(items: readonly T[], n: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/** A call that fails instead of hanging: a webhook that does not answer within 30 s does not serve. */
async function call(port: number, path: string, body?: string): Promise<Reply | Error> {
  const timeout = new Promise<Error>((resolve) =>
    setTimeout(() => {
      resolve(new Error(`${path}: no answer within 30 s`));
    }, 30_000).unref(),
  );
  const reply = httpsCall({
    port,
    caPem: ca.certPem,
    path,
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }),
  }).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  return Promise.race([reply, timeout]);
}

interface LogLine {
  readonly msg?: string;
  readonly pods?: number;
}

/** The webhook's JSON log lines so far. */
function logLines(out: string): LogLine[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l) as LogLine;
      } catch {
        return {};
      }
    });
}

describe('a tenant with 400 Pods of 250 KB annotations leaves the webhook serving', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-large-lists-'));
    ({ ca, certFile, keyFile } = await writeServingFiles(dir, 'large-lists-test-ca'));
    core = plane().cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    await putSeedConfig(plane().cluster('runtime'));
    // A candidate set: its check lists every Pod of the cluster (registries that refuse at once).
    const candidate = JSON.stringify({
      overrides: { 'docker.io': '127.0.0.1:1' },
      availableFeatures: ['rt-cfg.kyma-project.io/alter-img-registry'],
      namespaceFeatures: { [TENANT]: ['rt-cfg.kyma-project.io/all'] },
    });
    await core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: PREFLIGHT_SECRET, annotations: { [SET_VERSION_ANNOTATION]: 'candidate-1' } },
        type: 'Opaque',
        data: {
          [PREFLIGHT_CONFIG_KEY]: Buffer.from(candidate).toString('base64'),
          [PREFLIGHT_DOCKER_CONFIG_KEY]: Buffer.from('{"auths":{}}').toString('base64'),
        },
      },
    });
    await core.createNamespace({
      body: {
        metadata: { name: TENANT, annotations: { 'tenant.example.com/blob': 'n'.repeat(ANNOTATION_BYTES) } },
      },
    });
    await pool(
      Array.from({ length: PODS }, (_, i) => i),
      8,
      (i) => core.createNamespacedPod({ namespace: TENANT, body: largePod(i) }),
    );
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('rtb webhook at the production heap lists them all, answers every review and /healthz, and does not crash', async () => {
    const port = await freePort();
    const w = spawnWebhookProcess({
      kubeconfigPath: plane().cluster('runtime').kubeconfigPath,
      certFile,
      keyFile,
      port,
      extraArgs: [`--status-config-map=${NS}/${WEBHOOK_STATUS_CONFIG_MAP}`, '--log-level=debug'],
      // As the rendered Deployment runs it: the old generation capped at its 96 MB.
      env: {
        ...process.env,
        ...WEBHOOK_MALLOC_ENV,
        NODE_OPTIONS: WEBHOOK_NODE_OPTIONS,
        POD_NAMESPACE: NS,
      },
    });
    const tail = (): string =>
      `exit ${JSON.stringify(w.ended())}; stderr: ${w.stderr().slice(-2000)}; stdout: ${w.output().slice(-2000)}`;
    const said = (msg: string): LogLine | undefined => logLines(w.output()).find((l) => l.msg === msg);
    try {
      // Serving first (the lists of the agent's parts start once it serves).
      await eventually(
        async () => {
          if (w.ended()) throw new Error(`the webhook exited: ${tail()}`);
          const r = await call(port, '/healthz');
          return r instanceof Error || r.status !== 200 ? undefined : true;
        },
        120_000,
        'the webhook to serve',
      );
      // Then, while the follower, the restarter and the preflight list the Pods: a review and a
      // /healthz after another, each answered, until every list is through.
      const answered = { reviews: 0, healthz: 0 };
      const failures: string[] = [];
      let n = 0;
      const preflightDone = async (): Promise<boolean> => {
        const cm = await core
          .readNamespacedConfigMap({ name: WEBHOOK_STATUS_CONFIG_MAP, namespace: NS })
          .catch(() => undefined);
        const report = cm?.data?.[PREFLIGHT_KEY] ?? '';
        return report.includes('candidate-1') && report.includes('"done"');
      };
      const listed = async (): Promise<boolean> =>
        said('following the Pods the webhook changed') !== undefined &&
        said('active trust-bundle restarter') !== undefined &&
        (await preflightDone());
      const deadline = Date.now() + 600_000;
      while (!w.ended() && Date.now() < deadline) {
        const uid = `large-${n++}`;
        const review = await call(port, '/mutate', podReview(seedPodBefore(), { uid }));
        if (review instanceof Error || review.status !== 200 || !review.body.includes(`"uid":"${uid}"`))
          failures.push(review instanceof Error ? review.message : `review: HTTP ${review.status}`);
        else answered.reviews++;
        const health = await call(port, '/healthz');
        if (health instanceof Error || health.status !== 200)
          failures.push(health instanceof Error ? health.message : `healthz: HTTP ${health.status}`);
        else answered.healthz++;
        if (n >= 20 && (await listed())) break;
      }
      assert.equal(w.ended(), undefined, `the webhook is alive: ${tail()}`);
      assert.deepEqual(failures, [], `every call answered (${JSON.stringify(answered)})`);
      assert.equal(
        said('active trust-bundle restarter')?.pods,
        PODS,
        'the restarter listed every Pod (its label-selected list)',
      );
      assert.equal(
        said('following the Pods the webhook changed')?.pods,
        PODS,
        'the follower listed every Pod (its label-selected list)',
      );
      assert.ok(await preflightDone(), 'the preflight listed every Pod and reported');
      const metrics = await call(port, '/metrics');
      assert.ok(!(metrics instanceof Error));
      const heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(metrics.body)?.[1]);
      const rss = Number(/^process_resident_memory_bytes (\S+)$/m.exec(metrics.body)?.[1]);
      console.log(
        `large lists: ${answered.reviews} reviews and ${answered.healthz} /healthz answered while listing; ` +
          `heap used ${(heap / 2 ** 20).toFixed(1)} MiB, RSS ${(rss / 2 ** 20).toFixed(1)} MiB`,
      );
      assert.ok(answered.reviews >= 20);
    } finally {
      if (!w.ended()) w.child.kill('SIGTERM');
      // Killed if it has not exited by then; the assertion below says how it ended.
      await w.exited(60_000).catch(() => undefined);
    }
    assert.equal(w.ended()?.code, 0, `a clean exit on SIGTERM: ${tail()}`);
  });
});
