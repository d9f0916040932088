import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import {
  ADMISSION_POLICY_API,
  ADMISSION_POLICY_FIELD_MANAGER,
  readAdmissionPath,
  writeAdmissionPath,
  type AdmissionPathReport,
  type AdmissionPolicyVersion,
} from '../../../../src/api/admission-path-report.js';
import { servedApi, type ApiChoice } from '../../../../src/kube/served-api.js';
import {
  AdmissionPolicyInstaller,
  ADMISSION_POLICY_RETRY_MS,
  DEFAULT_ADMISSION_POLICY_INTERVAL_MS,
  type AdmissionPolicyCalls,
  type AdmissionPolicyInstallerOptions,
} from '../../../../src/runtime-agent/admission-policy/admission-policy-installer.js';
import {
  ADMISSION_POLICY_HASH_ANNOTATION,
  passWrites,
  type FoundObject,
  type FoundObjects,
  type InstallDecision,
  type LoadedState,
  type Manifest,
} from '../../../../src/runtime-agent/admission-policy/install-decision.js';
import type { ClusterAccess } from '../../../../src/kube/cluster-access.js';
import { makeConfig } from '../../mutation/support.js';
import { deferred } from '../../../support/deferred.js';
import { ManualSleep } from '../../../support/manual-sleep.js';

const NONE: FoundObjects = { params: undefined, policy: undefined, binding: undefined };
const KINDS = ['ConfigMap', 'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'];
const POLICY_V1: AdmissionPathReport = {
  path: 'policy',
  api: 'admissionregistration.k8s.io/v1',
  installer: 'agent',
};
// Never called: every call goes through the fake runtime.
const NO_ACCESS: ClusterAccess = {
  getCurrentCluster: () => ({ server: 'https://unused.invalid' }),
  applyToHTTPSOptions: async () => {},
};

/** The runtime's API server as the installer sees it: discovery, the objects held, the report. */
class FakeRuntime implements AdmissionPolicyCalls {
  api: ApiChoice<AdmissionPolicyVersion> = servedApi(ADMISSION_POLICY_API, 'v1');
  held: FoundObjects = NONE;
  discovers = 0;
  reads = 0;
  /** Kinds of each apply. */
  readonly applied: unknown[][] = [];
  readonly published: string[] = [];
  failApply = 0;
  failPublish = 0;
  /** While set, a pass waits in discovery until it settles (resolves or rejects). */
  gate: Promise<void> | undefined;

  async discover(): Promise<ApiChoice<AdmissionPolicyVersion>> {
    this.discovers++;
    await this.gate;
    return this.api;
  }
  found(): Promise<FoundObjects> {
    this.reads++;
    return Promise.resolve(this.held);
  }
  apply(objects: readonly Manifest[]): Promise<void> {
    if (this.failApply > 0) {
      this.failApply--;
      return Promise.reject(new Error('apply refused'));
    }
    this.applied.push(objects.map((m) => m.kind));
    const as = (kind: string, before: FoundObject | undefined): FoundObject | undefined => {
      const m = objects.find((o) => o.kind === kind);
      const meta = m?.metadata as { annotations?: Record<string, string> } | undefined;
      return m === undefined
        ? before
        : {
            managers: [ADMISSION_POLICY_FIELD_MANAGER],
            hash: meta?.annotations?.[ADMISSION_POLICY_HASH_ANNOTATION],
          };
    };
    this.held = {
      params: as('ConfigMap', this.held.params),
      policy: as('MutatingAdmissionPolicy', this.held.policy),
      binding: as('MutatingAdmissionPolicyBinding', this.held.binding),
    };
    return Promise.resolve();
  }
  publish(text: string): Promise<void> {
    if (this.failPublish > 0) {
      this.failPublish--;
      return Promise.reject(new Error('status ConfigMap refused'));
    }
    this.published.push(text);
    return Promise.resolve();
  }
}

/** Resolves once `cond` holds; rejects after a second (a loop that never gets there). */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 1_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

/**
 * An installer over a fake runtime and a hand-ended wait, leading until told; `startTerm` starts a
 * term and returns it once its first pass is done (the loop waits), `nextPass` ends the wait and
 * returns once the pass after it is done.
 */
function setup(patch: Partial<AdmissionPolicyInstallerOptions> = {}) {
  const runtime = new FakeRuntime();
  const clock = new ManualSleep();
  const logs: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => logs.push(JSON.parse(s) as never) });
  let state: LoadedState = {
    config: makeConfig(),
    revision: 'set-1',
    trustBundle: undefined,
    trustBundleMount: false,
    namespace: 'kyma-system',
  };
  let leading = true;
  const installer = new AdmissionPolicyInstaller({
    access: NO_ACCESS,
    logger,
    loaded: () => state,
    installsHere: true,
    statusConfigMap: undefined,
    intervalMs: 1_234,
    calls: runtime,
    sleep: clock.sleep,
    ...patch,
  });
  const term = () => installer.leaderPart({ isLeader: () => leading });
  const waited = (n: number, what: string) => until(() => clock.asked.length === n, what);
  return {
    runtime,
    clock,
    installer,
    term,
    startTerm: async () => {
      const n = clock.asked.length;
      const t = term();
      await t.start();
      await waited(n + 1, 'the first wait of the term');
      return t;
    },
    nextPass: async () => {
      const n = clock.asked.length;
      assert.ok(clock.wake(), 'the loop waits');
      await waited(n + 1, 'the wait after the next pass');
    },
    warnings: () => logs.filter((l) => l.level === 40).map((l) => l.msg),
    load: (p: Partial<LoadedState>) => (state = { ...state, ...p }),
    lead: (yes: boolean) => (leading = yes),
    reports: () => runtime.published.map((t) => readAdmissionPath(t)),
  };
}

// A loop that hangs (a stop that does not end its wait) fails instead.
describe('the runtime agent installs the admission policy (the loop)', { timeout: 5_000 }, () => {
  test('a leader applies parameters, policy and binding and reports the policy path; the next pass, after the interval, writes nothing', async () => {
    const h = setup();
    const t = await h.startTerm();
    assert.deepEqual(h.runtime.applied, [KINDS]);
    assert.deepEqual(h.reports(), [POLICY_V1]);
    assert.deepEqual(h.installer.report(), POLICY_V1);
    assert.deepEqual(h.clock.asked, [1_234]);
    await h.nextPass();
    assert.equal(h.runtime.reads, 2);
    assert.deepEqual(h.runtime.applied, [KINDS], 'what the runtime holds is not applied again');
    assert.equal(h.runtime.published.length, 1, 'an unchanged report is not written again');
    await t.stop();
  });

  test('a changed config: the next pass applies the parameters alone and keeps the report', async () => {
    const h = setup();
    const t = await h.startTerm();
    h.load({ config: makeConfig({ overrides: { 'replace.me': 'other.io' } }) });
    h.installer.refresh();
    await until(() => h.clock.asked.length === 2, 'the pass the refresh asked for');
    assert.deepEqual(h.runtime.applied, [KINDS, ['ConfigMap']]);
    assert.equal(h.runtime.published.length, 1);
    await t.stop();
  });

  test('the interval is five minutes unless set', async () => {
    const h = setup({ intervalMs: undefined });
    const t = await h.startTerm();
    assert.deepEqual(h.clock.asked, [DEFAULT_ADMISSION_POLICY_INTERVAL_MS]);
    assert.equal(DEFAULT_ADMISSION_POLICY_INTERVAL_MS, 300_000);
    await t.stop();
  });

  test('a replica that no longer leads applies nothing, writes no report and keeps its last one', async () => {
    const h = setup();
    const t = await h.startTerm();
    h.lead(false);
    h.load({ config: makeConfig({ overrides: { 'replace.me': 'other.io' } }), revision: 'set-2' });
    await h.nextPass();
    assert.equal(h.runtime.reads, 2, 'it still reads');
    assert.deepEqual(h.runtime.applied, [KINDS]);
    assert.equal(h.runtime.published.length, 1);
    assert.deepEqual(h.installer.report(), POLICY_V1);
    await t.stop();
  });

  test('a failed apply is logged and tried again soon, sooner than the interval; no report before the objects are in', async () => {
    const h = setup({ intervalMs: undefined });
    h.runtime.failApply = 1;
    const t = await h.startTerm();
    assert.deepEqual(h.runtime.applied, []);
    assert.deepEqual(h.runtime.published, []);
    assert.equal(h.installer.report(), undefined);
    assert.deepEqual(h.warnings(), ['cannot install the admission policy; trying again']);
    assert.deepEqual(
      h.clock.asked,
      [ADMISSION_POLICY_RETRY_MS],
      'a failure waits the retry, not the interval',
    );
    await h.nextPass();
    assert.deepEqual(h.runtime.applied, [KINDS]);
    assert.deepEqual(h.reports(), [POLICY_V1]);
    assert.deepEqual(h.clock.asked, [ADMISSION_POLICY_RETRY_MS, DEFAULT_ADMISSION_POLICY_INTERVAL_MS]);
    await t.stop();
  });

  test('failures in a row wait twice as long each time, up to the interval; a success starts over', async () => {
    const h = setup({ intervalMs: 30_000 });
    h.runtime.failApply = 4;
    const t = await h.startTerm();
    for (let i = 0; i < 3; i++) await h.nextPass();
    assert.deepEqual(h.clock.asked, [5_000, 10_000, 20_000, 30_000]);
    await h.nextPass();
    assert.deepEqual(h.runtime.applied, [KINDS], 'the fifth pass applies');
    h.runtime.failApply = 1;
    h.load({ config: makeConfig({ overrides: { 'replace.me': 'other.io' } }) });
    await h.nextPass();
    assert.deepEqual(h.clock.asked.slice(4), [30_000, 5_000], 'after a success, the first retry again');
    await t.stop();
  });

  test('a report that could not be written is written by the next pass', async () => {
    const h = setup();
    h.runtime.failPublish = 1;
    const t = await h.startTerm();
    assert.deepEqual(h.runtime.applied, [KINDS]);
    assert.deepEqual(h.runtime.published, []);
    assert.equal(h.warnings().length, 1);
    await h.nextPass();
    assert.deepEqual(h.runtime.applied, [KINDS], 'the objects are in');
    assert.deepEqual(h.reports(), [POLICY_V1]);
    await t.stop();
  });

  test('a refresh during the wait passes at once; one during a pass ends the wait after it', async () => {
    const h = setup();
    const t = await h.startTerm();
    h.installer.refresh();
    await until(() => h.runtime.discovers === 2 && h.clock.asked.length === 2, 'the refreshed pass');
    const g = deferred();
    h.runtime.gate = g.promise;
    assert.ok(h.clock.wake(), 'the loop waits');
    await until(() => h.runtime.discovers === 3, 'the third pass to start');
    h.installer.refresh();
    h.runtime.gate = undefined;
    g.resolve();
    // No elapse: the refresh during the third pass ends the wait after it.
    await until(() => h.runtime.discovers === 4 && h.clock.asked.length === 4, 'a pass without waiting');
    await t.stop();
  });

  test('stopping the term ends the wait and the loop; a pass failing after the stop is not logged', async () => {
    const h = setup();
    const t = await h.startTerm();
    await t.stop();
    assert.equal(h.runtime.discovers, 1);

    const t2 = h.term();
    const g = deferred();
    h.runtime.gate = g.promise;
    await t2.start();
    await until(() => h.runtime.discovers === 2, 'the pass to start');
    const stopping = t2.stop();
    g.reject(new Error('connection reset by the stop'));
    await stopping;
    assert.deepEqual(h.warnings(), []);
    assert.equal(h.clock.asked.length, 1, 'no wait after the stop');
  });

  test('each term writes its report again, unchanged as it is', async () => {
    const h = setup();
    const t = await h.startTerm();
    await t.stop();
    const t2 = await h.startTerm();
    assert.deepEqual(h.reports(), [POLICY_V1, POLICY_V1]);
    assert.deepEqual(h.runtime.applied, [KINDS]);
    await t2.stop();
  });

  test('on a runtime serving neither version: nothing read nor applied, the webhook path reported', async () => {
    const h = setup();
    h.runtime.api = { served: false, found: 'v1: absent, v1beta1: absent' };
    const t = await h.startTerm();
    assert.equal(h.runtime.reads, 0);
    assert.deepEqual(h.runtime.applied, []);
    assert.deepEqual(h.reports(), [
      { path: 'webhook', api: 'none', installer: 'none', reason: 'v1: absent, v1beta1: absent' },
    ]);
    await t.stop();
  });
});

describe('what one pass writes (passWrites)', () => {
  const objects: Manifest[] = [{ kind: 'ConfigMap' }];
  const decision = (apply: readonly Manifest[]): InstallDecision => ({ apply, report: POLICY_V1 });
  const text = writeAdmissionPath(POLICY_V1);
  const other = writeAdmissionPath({ ...POLICY_V1, path: 'webhook' });
  const cases: {
    leads: boolean;
    apply: readonly Manifest[];
    written: string | undefined;
    want: { apply: readonly Manifest[]; report: string | undefined } | undefined;
  }[] = [
    { leads: false, apply: [], written: undefined, want: undefined },
    { leads: false, apply: [], written: text, want: undefined },
    { leads: false, apply: [], written: other, want: undefined },
    { leads: false, apply: objects, written: undefined, want: undefined },
    { leads: false, apply: objects, written: text, want: undefined },
    { leads: false, apply: objects, written: other, want: undefined },
    { leads: true, apply: [], written: undefined, want: { apply: [], report: text } },
    { leads: true, apply: [], written: text, want: { apply: [], report: undefined } },
    { leads: true, apply: [], written: other, want: { apply: [], report: text } },
    { leads: true, apply: objects, written: undefined, want: { apply: objects, report: text } },
    { leads: true, apply: objects, written: text, want: { apply: objects, report: undefined } },
    { leads: true, apply: objects, written: other, want: { apply: objects, report: text } },
  ];
  for (const c of cases)
    test(`leads ${String(c.leads)}, ${c.apply.length} to apply, written ${c.written === undefined ? 'nothing' : c.written === text ? 'the same report' : 'another report'}`, () => {
      assert.deepEqual(passWrites(decision(c.apply), c.leads, c.written), c.want);
    });
});
