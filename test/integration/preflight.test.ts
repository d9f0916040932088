// The preflight (DESIGN §11) on a real API server and the real local registry: Pods created with
// images (no node: they never run, their spec's images are what a restart would pull), candidate
// Secrets as the KCP writes them, the report read back from the status ConfigMap.
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SET_VERSION_ANNOTATION } from '../../src/api/runtime-bootstrapper.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { FEATURE_ALTER_IMG_REGISTRY } from '../../src/api/webhook-features.js';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  PREFLIGHT_CONFIG_KEY,
  PREFLIGHT_DOCKER_CONFIG_KEY,
  PREFLIGHT_KEY,
  PREFLIGHT_SECRET,
  WORKLOAD_FIELD_MANAGER,
  WORKLOADS_KEY,
  readPreflight,
  type PreflightReport,
} from '../../src/api/workload-health.js';
import { eventually } from '../../src/envtest/eventually.js';
import { LocalRegistry } from '../../src/envtest/local-registry.js';
import { applyObjects } from '../../src/kube/apply.js';
import {
  startPreflight,
  type Preflight,
  type PreflightOptions,
} from '../../src/runtime-agent/preflight/preflight-runner.js';
import { useControlPlane } from '../support/control-plane.js';
import { startFakeRegistry, type FakeRegistry } from '../support/fake-registry.js';
import { pushTinyImage } from '../support/registry-push.js';
import { silentLogger } from '../../src/telemetry/logger.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const SOURCE = 'src.example.com';

let dir: string;
let registry: LocalRegistry;
/** A registry that never answers for the repositories under `hang/`. */
let silent: FakeRegistry;
const BUDGET_MS = 4_000;
let kc: KubeConfig;
let core: CoreV1Api;
let preflight: Preflight | undefined;
let active = false;

const pod = (
  namespace: string,
  name: string,
  images: readonly string[],
  annotations?: Record<string, string>,
): V1Pod => ({
  metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
  spec: { containers: images.map((image, i) => ({ name: `c${i}`, image })) },
});

/** The candidate Secret of a set: its config's override sends SOURCE to `target`. */
async function offer(
  version: string,
  target: string,
  password: string,
  overrideExclusions?: readonly string[],
): Promise<void> {
  const config = JSON.stringify({
    overrides: { [SOURCE]: target },
    availableFeatures: [FEATURE_ALTER_IMG_REGISTRY],
    overrideExclusions,
  });
  const docker = JSON.stringify({
    auths: { [registry.host]: { auth: Buffer.from(`rtb:${password}`).toString('base64') } },
  });
  const body = {
    metadata: { name: PREFLIGHT_SECRET, annotations: { [SET_VERSION_ANNOTATION]: version } },
    type: 'Opaque',
    data: {
      [PREFLIGHT_CONFIG_KEY]: Buffer.from(config).toString('base64'),
      [PREFLIGHT_DOCKER_CONFIG_KEY]: Buffer.from(docker).toString('base64'),
    },
  };
  try {
    await core.replaceNamespacedSecret({ name: PREFLIGHT_SECRET, namespace: RUNTIME_NAMESPACE, body });
  } catch {
    await core.createNamespacedSecret({ namespace: RUNTIME_NAMESPACE, body });
  }
}

async function statusData(): Promise<Record<string, string>> {
  try {
    return (
      (await core.readNamespacedConfigMap({ name: WEBHOOK_STATUS_CONFIG_MAP, namespace: RUNTIME_NAMESPACE }))
        .data ?? {}
    );
  } catch {
    return {};
  }
}

/** The report in the ConfigMap if it is of `version` and in `phase`. */
async function reportOf(
  version: string,
  phase: PreflightReport['phase'],
): Promise<PreflightReport | undefined> {
  const report = readPreflight((await statusData())[PREFLIGHT_KEY]);
  return report?.version === version && report.phase === phase ? report : undefined;
}

/** The finished report of `version`, once the ConfigMap holds it. */
const finished = (version: string): Promise<PreflightReport> =>
  eventually(() => reportOf(version, 'done'), 30_000, `the preflight of ${version}`, 100);

/** Another replica's preflight, leading from the start, reaching the local registry; `over` adds. */
const anotherLeader = (over: Partial<PreflightOptions> = {}): Preflight =>
  startPreflight({
    access: kc,
    isActive: () => true,
    logger: silentLogger(),
    registryServers: { [registry.host]: `http://${registry.host}` },
    activeCheckMs: 100,
    ...over,
  });

describe('the preflight on a real API server and the local registry', () => {
  const PASSWORD = 'preflight-Pa55word';
  let mirror: string;
  let full: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-preflight-'));
    registry = await LocalRegistry.start({ dir, credentials: { username: 'rtb', password: PASSWORD } });
    mirror = `${registry.host}/mirror`;
    full = `${registry.host}/full`;
    // The mirror lacks team/db:3.0; the full one holds every image.
    await Promise.all([
      pushTinyImage(registry, 'mirror/team/app', '1.0'),
      pushTinyImage(registry, 'mirror/team/web', '2.0'),
      ...['team/app:1.0', 'team/web:2.0', 'team/db:3.0'].map((i) => {
        const [repository, tag] = i.split(':') as [string, string];
        return pushTinyImage(registry, `full/${repository}`, tag);
      }),
    ]);

    silent = await startFakeRegistry({
      answers: Object.fromEntries(['app', 'web', 'db'].map((r) => [`hang/team/${r}`, 'hang' as const])),
    });

    kc = plane().cluster('runtime').kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } });
    await core.createNamespace({
      body: { metadata: { name: 'apps', annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true' } } },
    });
    await core.createNamespace({ body: { metadata: { name: 'quiet' } } });
    const pods = [
      // Rewritten earlier under the set in force: the original is what the candidate moves.
      pod('apps', 'app', ['current.example.com/team/app:1.0'], {
        [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ c0: `${SOURCE}/team/app:1.0` }),
      }),
      pod('apps', 'web', [`${SOURCE}/team/web:2.0`, 'quay.io/other/sidecar:1']),
      pod('apps', 'db', [`${SOURCE}/team/db:3.0`]),
      // Opted out by the Pod, and in a namespace that does not opt in: never checked (both are
      // in no registry, so a check would find them missing).
      pod('apps', 'private', [`${SOURCE}/team/private:1`], { [FEATURE_ALTER_IMG_REGISTRY]: 'false' }),
      pod('quiet', 'other', [`${SOURCE}/team/other:1`]),
    ];
    for (const body of pods) await core.createNamespacedPod({ namespace: body.metadata!.namespace!, body });
    // Another writer's key in the status ConfigMap: the preflight's applies must leave it.
    await applyObjects(
      kc,
      [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: WEBHOOK_STATUS_CONFIG_MAP, namespace: RUNTIME_NAMESPACE },
          data: { [WORKLOADS_KEY]: '{}' },
        } as never,
      ],
      { fieldManager: WORKLOAD_FIELD_MANAGER },
    );
    preflight = startPreflight({
      access: kc,
      isActive: () => active,
      logger: silentLogger(),
      registryServers: { [registry.host]: `http://${registry.host}`, [silent.host]: `http://${silent.host}` },
      activeCheckMs: 100,
      requestTimeoutMs: 30_000,
      budgetMs: BUDGET_MS,
    });
  });

  after(async () => {
    await preflight?.stop();
    await silent.close();
    await registry.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a replica that does not lead checks nothing', async () => {
    await offer('v1', mirror, PASSWORD);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal((await statusData())[PREFLIGHT_KEY], undefined);
    assert.equal(preflight!.report('v1'), undefined);
  });

  test('a mirror that lacks a running image: missing, with the image; opted-out Pods unchecked', async () => {
    active = true;
    const report = await finished('v1');
    assert.deepEqual(
      { checked: report.checked, skipped: report.skipped, missing: report.missing, refused: report.refused },
      { checked: 3, skipped: 0, missing: 1, refused: 0 },
    );
    assert.equal(report.unreachable, 0);
    assert.equal(report.samples.length, 1);
    assert.deepEqual(
      {
        image: report.samples[0]?.image,
        target: report.samples[0]?.target,
        result: report.samples[0]?.result,
      },
      { image: `${SOURCE}/team/db:3.0`, target: `${mirror}/team/db:3.0`, result: 'missing' },
    );
    assert.ok(preflight!.knownMissing(`${mirror}/team/db:3.0`));
    assert.ok(!preflight!.knownMissing(`${mirror}/team/app:1.0`));
    assert.ok(report.finishedAt !== undefined && report.finishedAt >= report.startedAt);
    assert.equal((await statusData())[WORKLOADS_KEY], '{}', "the other writer's key stays");
  });

  test('a candidate that excludes the image its mirror lacks: that image is not checked, nothing missing', async () => {
    await offer('v1-excluding', mirror, PASSWORD, [`${SOURCE}/team/db`]);
    const report = await finished('v1-excluding');
    assert.deepEqual(
      { checked: report.checked, missing: report.missing, refused: report.refused, samples: report.samples },
      { checked: 2, missing: 0, refused: 0, samples: [] },
    );
    assert.ok(!preflight!.knownMissing(`${mirror}/team/db:3.0`));
  });

  test('wrong credentials: every image refused, no password in the report', async () => {
    await offer('v2', mirror, 'not-the-password');
    const report = await finished('v2');
    assert.deepEqual(
      { checked: report.checked, missing: report.missing, refused: report.refused },
      { checked: 3, missing: 0, refused: 3 },
    );
    const text = (await statusData())[PREFLIGHT_KEY] ?? '';
    assert.ok(!text.includes('not-the-password') && !text.includes(PASSWORD));
    assert.ok(preflight!.knownMissing(`${mirror}/team/app:1.0`), 'refused counts as known missing');
  });

  test('a good candidate: all ok; a deleted Secret clears nothing', async () => {
    await offer('v3', full, PASSWORD);
    const report = await finished('v3');
    assert.deepEqual(
      [report.checked, report.missing, report.refused, report.unreachable, report.samples.length],
      [3, 0, 0, 0, 0],
    );
    assert.ok(!preflight!.knownMissing(`${mirror}/team/db:3.0`), 'only the last finished preflight counts');
    await core.deleteNamespacedSecret({ name: PREFLIGHT_SECRET, namespace: RUNTIME_NAMESPACE });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(readPreflight((await statusData())[PREFLIGHT_KEY])?.version, 'v3');
    assert.equal(preflight!.report('v3')?.phase, 'done');
  });

  test('a new leader finds the finished report of the same version and does not check again', async () => {
    await offer('v3', full, PASSWORD);
    const second = anotherLeader();
    try {
      const before = (await statusData())[PREFLIGHT_KEY];
      const adopted = await eventually(() => second.report('v3'), 10_000, 'the adopted report');
      assert.equal(adopted.phase, 'done');
      assert.equal((await statusData())[PREFLIGHT_KEY], before, 'not written again');
    } finally {
      await second.stop();
    }
  });
  /** Waits until the ConfigMap shows `version` running. */
  const running = (version: string): Promise<true> =>
    eventually(
      async () => ((await reportOf(version, 'running')) ? true : undefined),
      10_000,
      `the preflight of ${version} running`,
      50,
    );

  test('a registry that never answers: the time budget ends the check, its images skipped', async () => {
    const started = Date.now();
    await offer('v4', `${silent.host}/hang`, PASSWORD);
    const report = await finished('v4');
    assert.deepEqual(
      [report.checked, report.skipped, report.missing, report.refused, report.unreachable],
      [0, 3, 0, 0, 0],
    );
    assert.ok(Date.now() - started >= BUDGET_MS, 'not before the budget');
  });

  test('a newer candidate aborts the check in flight', async () => {
    await offer('v5', `${silent.host}/hang`, PASSWORD);
    await running('v5');
    await offer('v6', full, PASSWORD);
    const report = await finished('v6');
    assert.equal(report.checked, 3);
    assert.equal(preflight!.report('v5')?.phase, 'running', 'v5 never finished');
  });

  test('a replica that stops leading drops its check and starts none', async () => {
    await offer('v7', `${silent.host}/hang`, PASSWORD);
    await running('v7');
    active = false;
    await new Promise((r) => setTimeout(r, 300));
    await offer('v8', full, PASSWORD);
    await new Promise((r) => setTimeout(r, BUDGET_MS + 500));
    const report = readPreflight((await statusData())[PREFLIGHT_KEY]);
    assert.deepEqual([report?.version, report?.phase], ['v7', 'running'], 'neither finished nor followed');
    active = true;
    assert.equal((await finished('v8')).checked, 3);
  });
  test("a finding counts only where the stable set resolves the image: a tenant's private image is skipped", async () => {
    active = false;
    await new Promise((r) => setTimeout(r, 300));
    // A tenant's image in no registry of ours (a private repository elsewhere, say).
    await core.createNamespacedPod({
      namespace: 'apps',
      body: pod('apps', 'tenant-private', [`${SOURCE}/tenant/private:1`]),
    });
    const docker = JSON.stringify({
      auths: { [registry.host]: { auth: Buffer.from(`rtb:${PASSWORD}`).toString('base64') } },
    });
    const stable = anotherLeader({
      budgetMs: BUDGET_MS,
      // The set in force sends the source to the full registry, with the credentials it holds.
      stable: () => ({ overrides: { [SOURCE]: full }, dockerConfigJson: docker }),
    });
    try {
      await offer('v9', mirror, PASSWORD);
      const report = await finished('v9');
      assert.deepEqual(
        {
          checked: report.checked,
          skipped: report.skipped,
          missing: report.missing,
          refused: report.refused,
        },
        { checked: 3, skipped: 1, missing: 1, refused: 0 },
      );
      assert.deepEqual(
        report.samples.map((x) => x.image),
        [`${SOURCE}/team/db:3.0`],
        'the image the stable set serves and the candidate lacks',
      );
    } finally {
      await stable.stop();
      await core.deleteNamespacedPod({ namespace: 'apps', name: 'tenant-private' });
    }
  });
});
