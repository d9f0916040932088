// test-matrix: kubernetes
import { EventsV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { FORCE_PATCH_RECONCILIATION } from '../../src/api/runtime.js';
import { SIGNALLED_VERSION_ANNOTATION } from '../../src/controller/annotate/signal-decision.js';
import { SIGNAL_STATE_KEY } from '../../src/controller/annotate/signal-state-store.js';
import type { ControllerApp, ControllerAppOptions } from '../../src/controller/controller-app.js';
import type { ModeHandle } from '../../src/controller/mode.js';
import { KIM_MANIFESTS_CONFIG_MAP, KIM_MANIFESTS_KEY } from '../../src/api/runtime-names.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import {
  CONFIG_MAP,
  LogSink,
  NS,
  PULL_SECRET,
  configVariant,
  createRuntime,
  dockerConfig,
  metricValue,
  readRuntime,
  setConfigText,
  setPullSecret,
  setTrustBundle,
  setUpKcp,
  startTestController,
  type Kcp,
} from './controller-fixtures.js';
import { FakeKim } from './fake-kim.js';

const SELECTED = Array.from({ length: 12 }, (_, i) => `rt-${String(i).padStart(2, '0')}`);
const UNSELECTED = ['other-0', 'other-1', 'other-2'];
const SELECTOR = { 'rtb-test': 'selected' };
const COALESCE_MS = 2_000;

describe('rtb controller --mode=annotate on a real kube-apiserver', () => {
  const plane = useControlPlane({ clusters: ['kcp'] });
  let kcp: Kcp;
  let kim: FakeKim;
  let app: ControllerApp;
  const logs = new LogSink();
  const secrets: string[] = [];
  let auth = 0;
  const nextAuth = (): string => {
    auth++;
    const value = `s3cr3t-auth-${auth}-${Math.random().toString(36).slice(2)}`;
    secrets.push(value, dockerConfig(value)['.dockerconfigjson']!);
    return value;
  };

  const start = (extra: Partial<ControllerAppOptions> = {}): Promise<ControllerApp> =>
    startTestController(kcp.kc, {
      ...extra,
      logs,
      modeOptions: {
        signal: 'annotation',
        runtimeSelector: 'rtb-test=selected',
        coalesceMs: COALESCE_MS,
        concurrency: 4,
        // A short resync: the sources are re-evaluated all the time, and that must signal nobody.
        resyncMs: 150,
        stateConfigMapName: 'rt-bootstrapper-controller-state',
      },
    });

  const readState = async (): Promise<{ version: string; phase: string; watched?: string[] } | undefined> => {
    const cm = await kcp.core
      .readNamespacedConfigMap({ name: 'rt-bootstrapper-controller-state', namespace: NS })
      .catch(() => undefined);
    const text = cm?.data?.[SIGNAL_STATE_KEY];
    return text === undefined
      ? undefined
      : (JSON.parse(text) as { version: string; phase: string; watched?: string[] });
  };

  /** KIM's manifests ConfigMap holding `text` as manifests.yaml (created if missing). */
  const setManifests = async (data: Record<string, string>): Promise<void> => {
    const body = { metadata: { name: KIM_MANIFESTS_CONFIG_MAP, namespace: NS }, data };
    const current = await kcp.core
      .readNamespacedConfigMap({ name: KIM_MANIFESTS_CONFIG_MAP, namespace: NS })
      .catch(() => undefined);
    if (current === undefined) await kcp.core.createNamespacedConfigMap({ namespace: NS, body });
    else
      await kcp.core.replaceNamespacedConfigMap({
        name: KIM_MANIFESTS_CONFIG_MAP,
        namespace: NS,
        body: { ...current, data },
      });
  };
  /** A release as KIM reads it: documents split on `---`, the first Deployment carrying its version. */
  const release = (version: string): Record<string, string> => ({
    [KIM_MANIFESTS_KEY]: [
      'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: rt-bootstrapper-controller-manager\n  namespace: kyma-system\n',
      `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: rt-bootstrapper-controller-manager\n  namespace: kyma-system\n  labels:\n    app.kubernetes.io/version: "${version}"\n`,
    ].join('---\n'),
  });
  const withManifests = { manifestsConfigMapName: KIM_MANIFESTS_CONFIG_MAP };

  /** Waits until the current source set has been signalled completely. */
  const passCompleted = (what: string): Promise<string> =>
    eventually(
      async () => {
        const version = app.sources.snapshot().version;
        const s = await readState();
        return s?.version === version && s.phase === 'Completed' ? version : undefined;
      },
      60_000,
      what,
    );

  /** Waits until the watcher has seen the source set move away from `previous`. */
  const versionChangedFrom = (previous: string): Promise<string> =>
    eventually(
      () => {
        const v = app.sources.snapshot().version;
        return v !== previous ? v : undefined;
      },
      30_000,
      'the watcher to see the change',
    );

  /** Waits until the source set was evaluated `n` more times (a barrier for "nothing happened"). */
  const evaluations = async (n: number): Promise<void> => {
    const count = (): Promise<number> =>
      metricValue(app, 'controller_runtime_reconcile_total', { controller: 'annotate-sources' });
    const from = await count();
    await eventually(
      async () => ((await count()) >= from + n ? true : undefined),
      30_000,
      `${n} evaluations`,
    );
  };

  /** Runs `change`, then asserts every selected Runtime was signalled exactly once for it. */
  const signalsEachOnce = async (
    t: TestContext,
    what: string,
    change: () => Promise<unknown>,
  ): Promise<void> => {
    const before = new Map(kim.consumed);
    const signalledBefore = await metricValue(app, 'rtb_controller_runtimes_signalled_total');
    const started = performance.now();
    await change();
    await eventually(() => (kim.since(before).size === SELECTED.length ? true : undefined), 60_000, what);
    const latency = performance.now() - started;
    const version = await passCompleted(`the pass for ${what} to complete`);
    await evaluations(3);
    const got = kim.since(before);
    assert.deepEqual(
      [...got.entries()].sort(),
      SELECTED.map((n) => [n, 1]),
      `${what}: every selected Runtime once, no other`,
    );
    assert.equal(
      await metricValue(app, 'rtb_controller_runtimes_signalled_total'),
      signalledBefore + SELECTED.length,
    );
    const rt = await readRuntime(kcp, SELECTED[0]!);
    assert.equal(rt.metadata?.annotations?.[SIGNALLED_VERSION_ANNOTATION], version);
    assert.equal(await metricValue(app, 'rtb_controller_signalled_version_info', { version }), 1);
    t.diagnostic(
      `${what}: ${SELECTED.length} runtimes signalled and consumed ${Math.round(latency)} ms after the write (coalesce window ${COALESCE_MS} ms)`,
    );
  };

  /** Asserts nobody was signalled since `before` and nobody carries the signal. */
  const nobodySignalled = async (before: ReadonlyMap<string, number>, what: string): Promise<void> => {
    await evaluations(3);
    assert.deepEqual([...kim.since(before).entries()], [], what);
    for (const name of [...SELECTED, ...UNSELECTED]) {
      const rt = await readRuntime(kcp, name);
      assert.equal(rt.metadata?.annotations?.[FORCE_PATCH_RECONCILIATION], undefined, `${what}: ${name}`);
    }
  };

  before(async () => {
    const cluster = plane().cluster('kcp');
    kcp = await setUpKcp(cluster, cluster.caPem);
    await setPullSecret(kcp, nextAuth());
    for (const name of SELECTED) await createRuntime(kcp, name, SELECTOR);
    for (const name of UNSELECTED) await createRuntime(kcp, name);
    kim = new FakeKim(kcp);
    await kim.start();
    app = await start();
  });

  after(async () => {
    await app.stop();
    await kim.stop();
  });

  /** Waits until the controller reports `source` as a problem for `reason` (`what` for the failure). */
  const problemReported = (source: string, reason: string, what: string) =>
    eventually(
      async () =>
        (await metricValue(app, 'rtb_controller_source_problem', { source, reason })) === 1
          ? true
          : undefined,
      15_000,
      what,
    );

  test('the first start records the current sources and signals nobody', async () => {
    await passCompleted('the baseline');
    await nobodySignalled(new Map(), 'first start');
    assert.equal(await metricValue(app, 'rtb_controller_runtimes_signalled_total'), 0);
  });

  test('a pull Secret content change signals every selected Runtime once', async (t) => {
    await signalsEachOnce(t, 'pull Secret change', () => setPullSecret(kcp, nextAuth()));
  });

  test('a ClusterTrustBundle content change signals every selected Runtime once', async (t) => {
    const ca = await createCertificateAuthority({ commonName: 'rotated-ca' });
    await signalsEachOnce(t, 'trust bundle change', () => setTrustBundle(kcp, ca.certPem));
  });

  test('a ConfigMap content change signals every selected Runtime once', async (t) => {
    await signalsEachOnce(t, 'ConfigMap change', () =>
      setConfigText(kcp, configVariant('mirror-1.example.com')),
    );
  });

  test('a config upstream accepts with a warning is propagated, and the warning is reported once, field named', async (t) => {
    const warned = JSON.parse(configVariant('mirror-warned.example.com')) as {
      overrides: Record<string, string>;
    };
    warned.overrides = { ...warned.overrides, nodot: 'ghcr.io' };
    await signalsEachOnce(t, 'a config with a warning', () => setConfigText(kcp, JSON.stringify(warned)));
    const events = kcp.kc.makeApiClient(EventsV1Api);
    const warningsEvents = async (): Promise<string[]> =>
      (await events.listNamespacedEvent({ namespace: NS })).items
        .filter((e) => e.reason === 'SourceWarnings' && e.regarding?.name === CONFIG_MAP)
        .map((e) => e.note ?? '');
    const notes = await eventually(
      async () => {
        const found = await warningsEvents();
        return found.length > 0 ? found : undefined;
      },
      15_000,
      'a SourceWarnings event',
    );
    assert.match(notes[0] ?? '', /overrides\.nodot: key: never matches/);
    const logged = logs.lines.filter((l) => l.includes('source accepted with warnings'));
    assert.equal(logged.length, 1, 'logged once for this content');
    assert.match(logged[0] ?? '', /overrides\.nodot/);
    assert.equal(
      await metricValue(app, 'rtb_controller_source_problem', { source: 'configMap', reason: 'invalid' }),
      0,
      'a warning is no problem',
    );
  });

  test('a relabel of a source and the periodic resync signal nobody', async () => {
    const before = new Map(kim.consumed);
    const changes = await metricValue(app, 'rtb_controller_source_changes_total');
    const current = await kcp.core.readNamespacedSecret({ name: PULL_SECRET, namespace: NS });
    const relabelled = await kcp.core.replaceNamespacedSecret({
      name: PULL_SECRET,
      namespace: NS,
      body: { ...current, metadata: { ...current.metadata, labels: { relabelled: 'yes' } } },
    });
    const rv = relabelled.metadata?.resourceVersion;
    await eventually(
      () => (app.sources.snapshot().pullSecret?.metadata?.resourceVersion === rv ? true : undefined),
      15_000,
      'the watcher to see the relabel',
    );
    assert.equal(await metricValue(app, 'rtb_controller_source_changes_total'), changes, 'not a change');
    await nobodySignalled(before, 'relabel and resync');
  });

  test('a burst of changes within the window signals each Runtime once', async (t) => {
    const passes = await metricValue(app, 'rtb_controller_signal_passes_total');
    await signalsEachOnce(t, 'a burst of five changes', async () => {
      for (let i = 0; i < 4; i++) await setPullSecret(kcp, nextAuth());
      await setConfigText(kcp, configVariant('mirror-burst.example.com'));
    });
    assert.equal(await metricValue(app, 'rtb_controller_signal_passes_total'), passes + 1, 'one pass');
  });

  test('an invalid or missing source is reported and never propagated; the same content back is no change', async (t) => {
    const before = new Map(kim.consumed);
    await setConfigText(kcp, '{"availableFeatures":["rt-cfg.kyma-project.io/not-a-feature"]}');
    await problemReported('configMap', 'invalid', 'the invalid ConfigMap to be reported');
    const events = kcp.kc.makeApiClient(EventsV1Api);
    const reasons = async (): Promise<string[]> =>
      (await events.listNamespacedEvent({ namespace: NS })).items.map(
        (e) => `${e.reason ?? ''}/${e.regarding?.name ?? ''}`,
      );
    /** Waits until an event `reason/name` is recorded. */
    const eventSeen = (reasonAndName: string, what: string) =>
      eventually(async () => ((await reasons()).includes(reasonAndName) ? true : undefined), 15_000, what);
    await eventSeen(`SourceInvalid/${CONFIG_MAP}`, 'a SourceInvalid event');
    assert.ok(logs.text().includes('source not usable'), 'logged');
    await nobodySignalled(before, 'invalid config');

    // A missing Secret is a problem too; recreated with the content last signalled, it is no change.
    const secret = await kcp.core.readNamespacedSecret({ name: PULL_SECRET, namespace: NS });
    await kcp.core.deleteNamespacedSecret({ name: PULL_SECRET, namespace: NS });
    await problemReported('pullSecret', 'missing', 'the missing Secret to be reported');
    await eventSeen(`SourceMissing/${PULL_SECRET}`, 'a SourceMissing event');
    await kcp.core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: PULL_SECRET }, type: secret.type, data: secret.data },
    });
    await eventually(
      async () =>
        (await metricValue(app, 'rtb_controller_source_problem', { source: 'pullSecret' })) === 0
          ? true
          : undefined,
      15_000,
      'the Secret to be usable again',
    );
    await nobodySignalled(before, 'missing Secret, recreated unchanged');

    // Fixing the config is a change of the set: signalled once.
    await signalsEachOnce(t, 'the config fixed', () =>
      setConfigText(kcp, configVariant('mirror-2.example.com')),
    );
  });

  test('a Runtime created after a change is not signalled for it, but for the next one', async (t) => {
    const before = new Map(kim.consumed);
    const previous = app.sources.snapshot().version;
    await setPullSecret(kcp, nextAuth());
    await versionChangedFrom(previous);
    // Creation times have second precision: wait for the next second, then create, within the window.
    await new Promise((r) => setTimeout(r, 1_100 - (Date.now() % 1000)));
    await createRuntime(kcp, 'rt-late', SELECTOR);
    await eventually(
      () => (kim.since(before).size >= SELECTED.length ? true : undefined),
      60_000,
      'the existing Runtimes to be signalled',
    );
    await passCompleted('the pass');
    await evaluations(3);
    const got = kim.since(before);
    assert.equal(got.get('rt-late'), undefined, 'the late Runtime was not signalled');
    assert.equal(got.size, SELECTED.length, 'the others were');
    SELECTED.push('rt-late');
    await signalsEachOnce(t, 'the next change', () => setPullSecret(kcp, nextAuth()));
  });

  test('a restart signals nobody; a change made while the controller was down is signalled once', async (t) => {
    const before = new Map(kim.consumed);
    await app.stop();
    app = await start();
    await nobodySignalled(before, 'after a restart');
    await app.stop();
    await setConfigText(kcp, configVariant('mirror-3.example.com'));
    await signalsEachOnce(t, 'a change while down', async () => {
      app = await start();
    });
  });

  test('a watch cut by restarting the API server recovers with no lost change', async (t) => {
    const cluster = plane().cluster('kcp');
    await cluster.stop();
    await cluster.start();
    await signalsEachOnce(t, 'a change right after the API server restart', () =>
      setPullSecret(kcp, nextAuth()),
    );
  });

  test("with --manifests-config-map unset, KIM's manifests ConfigMap is not a source: a new release signals nobody", async () => {
    await setManifests(release('1.0.0'));
    await passCompleted('the current set');
    const before = new Map(kim.consumed);
    const version = app.sources.snapshot().version;
    await setManifests(release('1.1.0'));
    await nobodySignalled(before, 'a release while unwatched');
    const snap = app.sources.snapshot();
    assert.ok(!(snap.watched ?? []).includes('manifestsConfigMap'), 'not watched');
    assert.equal(snap.versions.manifestsConfigMap, undefined);
    assert.equal(snap.version, version, 'the set version ignores it');
    assert.equal(
      await metricValue(app, 'rtb_controller_source_changes_total', { source: 'manifestsConfigMap' }),
      0,
    );
  });

  test('setting --manifests-config-map on a running landscape signals nobody; a new release then signals every Runtime once', async (t) => {
    await app.stop();
    const before = new Map(kim.consumed);
    app = await start(withManifests);
    await eventually(
      async () => {
        const s = await readState();
        return s?.version === app.sources.snapshot().version && s.phase === 'Completed' ? s : undefined;
      },
      30_000,
      'the watched manifests to be recorded',
    );
    assert.ok((await readState())?.watched?.includes('manifestsConfigMap'), 'recorded as watched');
    assert.ok(logs.text().includes('watched sources changed, their content did not'));
    await nobodySignalled(before, 'the flag set');
    await signalsEachOnce(t, 'a new release in the manifests ConfigMap', () =>
      setManifests(release('1.2.0')),
    );
    assert.equal(
      await metricValue(app, 'rtb_controller_source_changes_total', { source: 'manifestsConfigMap' }),
      1,
    );
    // Coalesced with the other sources: a release and a config change in one burst, one pass.
    const passes = await metricValue(app, 'rtb_controller_signal_passes_total');
    await signalsEachOnce(t, 'a release with a config change', async () => {
      await setManifests(release('1.3.0'));
      await setConfigText(kcp, configVariant('mirror-release.example.com'));
    });
    assert.equal(await metricValue(app, 'rtb_controller_signal_passes_total'), passes + 1, 'one pass');
    // Remembered across restarts like the other sources.
    const afterPass = new Map(kim.consumed);
    await app.stop();
    app = await start(withManifests);
    await nobodySignalled(afterPass, 'a restart with the flag');
    await app.stop();
    await setManifests(release('1.4.0'));
    await signalsEachOnce(t, 'a release while the controller was down', async () => {
      app = await start(withManifests);
    });
  });

  test('a manifests ConfigMap without manifests.yaml is reported and held, not a crash; fixed, it is signalled once', async (t) => {
    const before = new Map(kim.consumed);
    await setManifests({ 'rt-bootstrapper-config.json': '{}' });
    await problemReported('manifestsConfigMap', 'invalid', 'the invalid manifests ConfigMap to be reported');
    const events = kcp.kc.makeApiClient(EventsV1Api);
    await eventually(
      async () =>
        (await events.listNamespacedEvent({ namespace: NS })).items.some(
          (e) =>
            e.reason === 'SourceInvalid' &&
            e.regarding?.name === KIM_MANIFESTS_CONFIG_MAP &&
            (e.note ?? '').includes(`key ${KIM_MANIFESTS_KEY} is missing`),
        )
          ? true
          : undefined,
      15_000,
      'a SourceInvalid event naming the key',
    );
    assert.ok(app.healthy() && app.ready(), 'still serving');
    await nobodySignalled(before, 'manifests without manifests.yaml');
    await signalsEachOnce(t, 'the manifests fixed', () => setManifests(release('1.5.0')));
  });

  test('direct mode ignores the manifests ConfigMap', async () => {
    const idle: ModeHandle = { stop: () => Promise.resolve() };
    const direct = await startTestController(kcp.kc, {
      logs,
      mode: 'direct',
      starter: () => Promise.resolve(idle),
      ...withManifests,
    });
    try {
      await direct.synced();
      const snap = direct.sources.snapshot();
      assert.ok(!(snap.watched ?? []).includes('manifestsConfigMap'));
      assert.equal(snap.manifestsConfigMap, undefined);
      assert.equal(snap.versions.manifestsConfigMap, undefined);
      assert.ok(logs.text().includes('the manifests ConfigMap is ignored: only annotate mode watches it'));
    } finally {
      await direct.stop();
    }
  });

  test('unsetting --manifests-config-map signals nobody', async () => {
    const before = new Map(kim.consumed);
    await app.stop();
    app = await start();
    await eventually(
      async () => {
        const s = await readState();
        return s?.version === app.sources.snapshot().version &&
          s.phase === 'Completed' &&
          !(s.watched ?? []).includes('manifestsConfigMap')
          ? true
          : undefined;
      },
      30_000,
      'the unwatched manifests to be recorded',
    );
    await nobodySignalled(before, 'the flag unset');
  });

  test('--signal=label writes a label of the same key instead', async () => {
    await app.stop();
    app = await startTestController(kcp.kc, {
      logs,
      modeOptions: {
        signal: 'label',
        runtimeSelector: 'rtb-test=selected',
        coalesceMs: 200,
        concurrency: 4,
        resyncMs: 300,
        stateConfigMapName: 'rt-bootstrapper-controller-state',
      },
    });
    await passCompleted('the restart in label mode');
    const before = new Map(kim.consumed);
    const previous = app.sources.snapshot().version;
    await setPullSecret(kcp, nextAuth());
    await versionChangedFrom(previous);
    const version = await passCompleted('the pass in label mode');
    for (const name of SELECTED) {
      const rt = await readRuntime(kcp, name);
      assert.equal(rt.metadata?.labels?.[FORCE_PATCH_RECONCILIATION], 'true', name);
      assert.equal(rt.metadata.annotations?.[SIGNALLED_VERSION_ANNOTATION], version, name);
    }
    for (const name of UNSELECTED) {
      assert.equal((await readRuntime(kcp, name)).metadata!.labels?.[FORCE_PATCH_RECONCILIATION], undefined);
    }
    assert.deepEqual([...kim.since(before).entries()], [], 'no annotation was written');
  });

  test('logs carry the object key; the Secret content reaches no log, metric or event', async () => {
    const signalled = logs.lines
      .map((l) => JSON.parse(l) as { msg?: string; objectKey?: string })
      .filter((l) => l.msg === 'runtime signalled');
    assert.ok(signalled.length > 0);
    for (const line of signalled) assert.match(line.objectKey ?? '', new RegExp(`^${NS}/rt-`));
    const metrics = await app.registry.metrics();
    const events = await kcp.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: NS });
    const notes = JSON.stringify(events.items.map((e) => e.note));
    for (const secret of secrets) {
      assert.ok(!logs.text().includes(secret), 'not in the logs');
      assert.ok(!metrics.includes(secret), 'not in the metrics');
      assert.ok(!notes.includes(secret), 'not in the events');
    }
  });
});
