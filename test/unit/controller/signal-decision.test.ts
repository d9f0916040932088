import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FORCE_PATCH_RECONCILIATION, type Runtime } from '../../../src/api/runtime.js';
import {
  SIGNALLED_VERSION_ANNOTATION,
  decideRuntimeSignal,
  decideSourceAction,
  existedAt,
  signalPatch,
  type SignalState,
  type SourceActionInput,
} from '../../../src/controller/annotate/signal-decision.js';
import { sourceSetVersion } from '../../../src/controller/sources/content-hash.js';
import type { SourceKind, SourceVersions } from '../../../src/controller/sources/source-watcher.js';

const NOW = new Date('2026-01-02T10:00:05.500Z');
const versions = { pullSecret: 'p', clusterTrustBundle: 'c', configMap: 'm' };
const input = (over: Partial<SourceActionInput> = {}): SourceActionInput => ({
  snapshot: { version: 'v2', versions, problems: [] },
  state: { version: 'v1', changeTime: '2026-01-01T00:00:00.000Z', phase: 'Completed' },
  activePass: undefined,
  lastChangeAt: undefined,
  changePending: false,
  now: NOW,
  ...over,
});
const signalling = (version: string): SignalState => ({
  version,
  changeTime: '2026-01-02T09:00:00.000Z',
  phase: 'Signalling',
});

describe('what to do with the source set', () => {
  test('a missing or invalid source holds everything, whatever the state', () => {
    const problems = [{ source: 'configMap' as const, type: 'invalid' as const, reason: 'bad' }];
    for (const state of [
      signalling('v1'),
      signalling('v2'),
      { ...signalling('v2'), phase: 'Completed' as const },
    ]) {
      const a = decideSourceAction(input({ snapshot: { version: 'v2', versions, problems }, state }));
      assert.deepEqual(a, { kind: 'hold', problems });
    }
  });

  test('no state yet: the current set is recorded as signalled, nobody is signalled', () => {
    const a = decideSourceAction(input({ state: undefined }));
    assert.ok(a.kind === 'baseline');
    assert.equal(a.reason, 'first');
    assert.equal(a.state.version, 'v2');
    assert.equal(a.state.phase, 'Completed');
    // Even with a problem: a source created later is then a change of the set, and signalled.
    const problems = [{ source: 'clusterTrustBundle' as const, type: 'missing' as const, reason: 'absent' }];
    const b = decideSourceAction(
      input({ state: undefined, snapshot: { version: 'v0', versions, problems } }),
    );
    assert.ok(b.kind === 'baseline');
    assert.equal(b.state.version, 'v0');
  });

  test('the set already signalled completely: idle (a restart or resync changes nothing)', () => {
    const state: SignalState = { version: 'v2', changeTime: 'x', phase: 'Completed' };
    assert.deepEqual(decideSourceAction(input({ state })), { kind: 'idle', state });
  });

  test('a new version starts a pass dated at the last change seen, persisted as Signalling', () => {
    const last = new Date('2026-01-02T09:59:59.000Z');
    const a = decideSourceAction(input({ lastChangeAt: last }));
    assert.ok(a.kind === 'start');
    assert.equal(a.resumed, false);
    assert.deepEqual(a.pass, { version: 'v2', changeTime: last });
    assert.deepEqual(a.state, {
      version: 'v2',
      changeTime: last.toISOString(),
      phase: 'Signalling',
      sources: versions,
    });
  });

  test('a change nobody saw (made while down) is dated now', () => {
    const a = decideSourceAction(input());
    assert.equal(a.kind === 'start' && a.pass.changeTime.getTime(), NOW.getTime());
  });

  test('while a burst is being coalesced, a new version waits; a finished set does not', () => {
    assert.deepEqual(decideSourceAction(input({ changePending: true })), { kind: 'settling' });
    const state: SignalState = { version: 'v2', changeTime: 'x', phase: 'Completed' };
    assert.equal(decideSourceAction(input({ changePending: true, state })).kind, 'idle');
  });

  test('a pass persisted as Signalling but not running here is resumed with its own change time', () => {
    const a = decideSourceAction(input({ state: signalling('v2') }));
    assert.ok(a.kind === 'start');
    assert.equal(a.resumed, true);
    assert.equal(a.pass.changeTime.toISOString(), '2026-01-02T09:00:00.000Z');
  });

  test('the running pass continues while Runtimes are pending and completes when none are', () => {
    const state = signalling('v2');
    assert.deepEqual(decideSourceAction(input({ state, activePass: { version: 'v2', pending: 3 } })), {
      kind: 'continue',
    });
    const done = decideSourceAction(input({ state, activePass: { version: 'v2', pending: 0 } }));
    assert.ok(done.kind === 'complete');
    assert.equal(done.state.phase, 'Completed');
    assert.equal(done.state.completedAt, NOW.toISOString());
  });

  test('a newer version replaces a running pass of an older one', () => {
    const a = decideSourceAction(
      input({ state: signalling('v1'), activePass: { version: 'v1', pending: 5 } }),
    );
    assert.equal(a.kind === 'start' && a.pass.version, 'v2');
  });
});

const runtime = (
  over: {
    created?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    deleting?: boolean;
  } = {},
): Runtime => ({
  metadata: {
    name: 'rt',
    namespace: 'kcp-system',
    creationTimestamp: (over.created ?? '2026-01-02T09:00:00Z') as unknown as Date,
    ...(over.annotations ? { annotations: over.annotations } : {}),
    ...(over.labels ? { labels: over.labels } : {}),
    ...(over.deleting ? { deletionTimestamp: '2026-01-02T10:00:00Z' as unknown as Date } : {}),
  },
});
const pass = { version: 'v2', changeTime: new Date('2026-01-02T10:00:05.500Z') };

describe('what to do with one Runtime of a pass', () => {
  test('an existing Runtime without the signal is signalled', () => {
    assert.deepEqual(decideRuntimeSignal(runtime(), pass, 'annotation'), { kind: 'signal' });
  });

  test('gone or being deleted: skipped', () => {
    assert.deepEqual(decideRuntimeSignal(undefined, pass, 'annotation'), { kind: 'skip', reason: 'gone' });
    assert.deepEqual(decideRuntimeSignal(runtime({ deleting: true }), pass, 'annotation'), {
      kind: 'skip',
      reason: 'gone',
    });
  });

  test('already signalled for this version (a resumed pass): skipped, even after KIM consumed it', () => {
    const rt = runtime({ annotations: { [SIGNALLED_VERSION_ANNOTATION]: 'v2' } });
    assert.deepEqual(decideRuntimeSignal(rt, pass, 'annotation'), { kind: 'skip', reason: 'up_to_date' });
  });

  test('still carrying the signal (of the configured kind): skipped', () => {
    const annotated = runtime({ annotations: { [FORCE_PATCH_RECONCILIATION]: 'true' } });
    const labelled = runtime({ labels: { [FORCE_PATCH_RECONCILIATION]: 'true' } });
    assert.deepEqual(decideRuntimeSignal(annotated, pass, 'annotation'), {
      kind: 'skip',
      reason: 'already_signalled',
    });
    assert.deepEqual(decideRuntimeSignal(labelled, pass, 'label'), {
      kind: 'skip',
      reason: 'already_signalled',
    });
    assert.deepEqual(decideRuntimeSignal(labelled, pass, 'annotation'), { kind: 'signal' });
    assert.deepEqual(
      decideRuntimeSignal(
        runtime({ annotations: { [FORCE_PATCH_RECONCILIATION]: 'false' } }),
        pass,
        'annotation',
      ),
      { kind: 'signal' },
    );
  });

  test('created after the change: skipped; created in the same second: signalled (may have the old config)', () => {
    assert.deepEqual(decideRuntimeSignal(runtime({ created: '2026-01-02T10:00:06Z' }), pass, 'annotation'), {
      kind: 'skip',
      reason: 'created_after_change',
    });
    assert.equal(existedAt(runtime({ created: '2026-01-02T10:00:05Z' }), pass.changeTime), true);
    assert.equal(existedAt(runtime({ created: '2026-01-02T10:00:04Z' }), pass.changeTime), true);
    assert.equal(existedAt({ metadata: {} }, pass.changeTime), true, 'unknown creation time: signal');
  });

  test('the patch sets the signal and stamps the version; label mode puts the signal in a label', () => {
    assert.deepEqual(signalPatch('v2', 'annotation'), {
      metadata: {
        annotations: { [FORCE_PATCH_RECONCILIATION]: 'true', [SIGNALLED_VERSION_ANNOTATION]: 'v2' },
      },
    });
    assert.deepEqual(signalPatch('v2', 'label'), {
      metadata: {
        labels: { [FORCE_PATCH_RECONCILIATION]: 'true' },
        annotations: { [SIGNALLED_VERSION_ANNOTATION]: 'v2' },
      },
    });
  });
});

describe('the manifests ConfigMap as a source, and flags that change what is watched', () => {
  const BASE = ['pullSecret', 'clusterTrustBundle', 'configMap'] as const;
  const WITH_MANIFESTS = [...BASE, 'manifestsConfigMap'] as const;
  const base = { pullSecret: 'p', clusterTrustBundle: 'c', configMap: 'm' };
  /** A snapshot as the watcher makes it: the set version over what it watches. */
  const snap = (
    versions: SourceVersions,
    watched: readonly SourceKind[] | undefined,
    problems: SourceActionInput['snapshot']['problems'] = [],
  ): SourceActionInput['snapshot'] => ({
    versions,
    ...(watched ? { watched } : {}),
    version: sourceSetVersion(versions, watched ?? []),
    problems,
  });
  /** A completed state recorded for `s` (as a baseline or a completed pass writes it). */
  const completed = (s: SourceActionInput['snapshot']): SignalState => ({
    version: s.version,
    changeTime: '2026-01-01T00:00:00.000Z',
    phase: 'Completed',
    completedAt: '2026-01-01T00:00:10.000Z',
    sources: s.versions,
    ...(s.watched ? { watched: s.watched } : {}),
  });

  test('a new release in the watched manifests ConfigMap is a change: one pass, its watch recorded', () => {
    const before = snap({ ...base, manifestsConfigMap: 'r1' }, WITH_MANIFESTS);
    const after = snap({ ...base, manifestsConfigMap: 'r2' }, WITH_MANIFESTS);
    assert.notEqual(after.version, before.version);
    const a = decideSourceAction(input({ snapshot: after, state: completed(before) }));
    assert.ok(a.kind === 'start');
    assert.equal(a.resumed, false);
    assert.equal(a.pass.version, after.version);
    assert.deepEqual(a.state.watched, WITH_MANIFESTS);
    assert.deepEqual(a.state.sources, after.versions);
    // Once recorded, the same release is idle.
    const done: SignalState = { ...a.state, phase: 'Completed' };
    assert.equal(decideSourceAction(input({ snapshot: after, state: done })).kind, 'idle');
  });

  test('a manifests ConfigMap without manifests.yaml holds everything, like any other source', () => {
    const problems = [{ source: 'manifestsConfigMap' as const, type: 'invalid' as const, reason: 'key' }];
    const before = snap({ ...base, manifestsConfigMap: 'r1' }, WITH_MANIFESTS);
    const after = snap({ ...base, manifestsConfigMap: 'r2' }, WITH_MANIFESTS, problems);
    assert.deepEqual(decideSourceAction(input({ snapshot: after, state: completed(before) })), {
      kind: 'hold',
      problems,
    });
  });

  test('starting to watch it (the flag set on a running landscape) signals nobody: recorded anew', () => {
    // Recorded by a controller without the flag (or before the source existed: no `watched`).
    for (const recorded of [snap(base, BASE), snap(base, undefined)]) {
      const now = snap({ ...base, manifestsConfigMap: 'r1' }, WITH_MANIFESTS);
      const state = completed(recorded);
      const a = decideSourceAction(input({ snapshot: now, state }));
      assert.ok(a.kind === 'baseline', a.kind);
      assert.equal(a.reason, 'watched-changed');
      assert.equal(a.state.version, now.version);
      assert.deepEqual(a.state.watched, WITH_MANIFESTS);
      assert.equal(a.state.phase, 'Completed');
      assert.equal(a.state.changeTime, state.changeTime, 'no change happened');
      assert.equal(a.state.completedAt, state.completedAt, 'nothing was signalled');
      // Then the first real change of the manifests is signalled.
      const next = snap({ ...base, manifestsConfigMap: 'r2' }, WITH_MANIFESTS);
      assert.equal(decideSourceAction(input({ snapshot: next, state: a.state })).kind, 'start');
    }
  });

  test('starting to watch a manifests ConfigMap that is missing records it missing; its creation is a change', () => {
    const problems = [{ source: 'manifestsConfigMap' as const, type: 'missing' as const, reason: 'absent' }];
    const now = snap(base, WITH_MANIFESTS, problems);
    const a = decideSourceAction(input({ snapshot: now, state: completed(snap(base, BASE)) }));
    assert.ok(a.kind === 'baseline' && a.reason === 'watched-changed');
    assert.equal(decideSourceAction(input({ snapshot: now, state: a.state })).kind, 'hold');
    const created = snap({ ...base, manifestsConfigMap: 'r1' }, WITH_MANIFESTS);
    assert.equal(decideSourceAction(input({ snapshot: created, state: a.state })).kind, 'start');
  });

  test('starting to watch it while another source changed too: the change is signalled', () => {
    const now = snap({ ...base, configMap: 'm2', manifestsConfigMap: 'r1' }, WITH_MANIFESTS);
    const a = decideSourceAction(input({ snapshot: now, state: completed(snap(base, BASE)) }));
    assert.ok(a.kind === 'start');
    assert.equal(a.pass.version, now.version);
  });

  test('no longer watching it signals nobody; with another change, or without recorded versions, it signals', () => {
    const recorded = completed(snap({ ...base, manifestsConfigMap: 'r1' }, WITH_MANIFESTS));
    const same = snap(base, BASE);
    const a = decideSourceAction(input({ snapshot: same, state: recorded }));
    assert.ok(a.kind === 'baseline' && a.reason === 'watched-changed');
    assert.equal(a.state.version, same.version);
    assert.deepEqual(a.state.watched, BASE);
    const changed = snap({ ...base, pullSecret: 'p2' }, BASE);
    assert.equal(decideSourceAction(input({ snapshot: changed, state: recorded })).kind, 'start');
    // Without the per-source versions nobody can tell what the recorded set held: signal.
    const { sources: _dropped, ...bare } = recorded;
    assert.equal(decideSourceAction(input({ snapshot: same, state: bare })).kind, 'start');
  });

  test('a pass interrupted before the flag changed resumes under its own version, then is recorded anew', () => {
    const recorded = snap(base, BASE);
    const state: SignalState = { ...completed(recorded), phase: 'Signalling' };
    const now = snap({ ...base, manifestsConfigMap: 'r1' }, WITH_MANIFESTS);
    const a = decideSourceAction(input({ snapshot: now, state }));
    assert.ok(a.kind === 'start');
    assert.equal(a.resumed, true);
    assert.equal(a.pass.version, recorded.version, 'Runtimes already stamped are not signalled again');
    const c = decideSourceAction(
      input({ snapshot: now, state, activePass: { version: recorded.version, pending: 0 } }),
    );
    assert.ok(c.kind === 'complete');
    const b = decideSourceAction(input({ snapshot: now, state: c.state }));
    assert.ok(b.kind === 'baseline' && b.reason === 'watched-changed');
  });
});
