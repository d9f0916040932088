import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { ReflectorStoppedError } from '../../../src/kube/reflector.js';
import type { ReflectorOptions } from '../../../src/kube/reflector-options.js';
import { reflectorHarness } from './reflector-harness.js';
import { ScriptedListerWatcher, obj, until, type Obj } from './scripted-lister-watcher.js';

/** A reflector over `lw` whose handlers log to `events`; unpaged, no logger, fast backoff unless overridden. */
const harness = (lw: ScriptedListerWatcher<Obj>, extra: Partial<ReflectorOptions<Obj>> = {}) =>
  reflectorHarness(lw, { pageSize: 0 }, extra);

/** A promise the test opens. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** The "server": one object whose version the test moves on; every list answers the current state. */
function server() {
  const state = { rv: 1 };
  const lw = new ScriptedListerWatcher<Obj>(() => ({
    items: [obj('a', String(state.rv))],
    resourceVersion: String(state.rv),
  }));
  return { state, lw };
}

void describe('Reflector.relist', () => {
  void test('ends the watch, lists at once, and resolves after the fresh list was stored and dispatched', async () => {
    const { state, lw } = server();
    const { reflector, events } = harness(lw);
    reflector.start();
    const w0 = await lw.watchNo(0);
    state.rv = 7; // changed on the server; the watch never delivered it
    let resolved = false;
    const relisted = reflector.relist().then(() => {
      resolved = true;
      // The handlers saw the difference before the caller goes on.
      assert.deepEqual(events, ['add a@1', 'update a 1->7']);
    });
    assert.ok(w0.signal.aborted, 'the watch in flight was ended');
    await relisted;
    assert.ok(resolved);
    assert.equal(lw.listCalls.length, 2);
    assert.equal(reflector.store.get('ns/a')?.metadata.resourceVersion, '7');
    const w1 = await lw.watchNo(1);
    assert.equal(w1.opts.resourceVersion, '7', 'watching goes on from the fresh list');
    await reflector.stop();
  });

  void test('a list already in flight does not count: the server may have answered it before the request', async () => {
    const { state, lw } = server();
    const gates = [gate(), gate()];
    lw.respond = async (_opts, call) => {
      const rv = String(state.rv); // the server's state when it answers
      await gates[call - 1]?.opened;
      return { items: [obj('a', rv)], resourceVersion: rv };
    };
    const { reflector } = harness(lw);
    reflector.start();
    await until(() => lw.listCalls.length === 1, 'the first list');
    let resolved = false;
    const relisted = reflector.relist().then(() => {
      resolved = true;
    });
    state.rv = 9;
    gates[0]!.open();
    await reflector.waitForSync();
    assert.equal(reflector.store.get('ns/a')?.metadata.resourceVersion, '1');
    await until(() => lw.listCalls.length === 2, 'a second list');
    assert.equal(resolved, false, 'not served by the list that started before it');
    gates[1]!.open();
    await relisted;
    assert.equal(lw.listCalls.length, 2);
    assert.equal(reflector.store.get('ns/a')?.metadata.resourceVersion, '9');
    await lw.watchNo(0);
    assert.equal(lw.watches.length, 1, 'no watch started between the two lists');
    await reflector.stop();
  });

  void test('cuts a long backoff short (a watch cut off by a partition)', async () => {
    const { state, lw } = server();
    const { reflector } = harness(lw, { backoff: { baseMs: 60_000, maxMs: 60_000, jitter: 0 } });
    reflector.start();
    // The connection breaks: the reflector backs off for a minute before it watches again.
    (await lw.watchNo(0)).fail(new KubeApiError('connection refused'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    state.rv = 5;
    const t0 = Date.now();
    await reflector.relist();
    assert.ok(Date.now() - t0 < 5_000, 'the 60 s backoff did not delay the fresh list');
    assert.equal(reflector.store.get('ns/a')?.metadata.resourceVersion, '5');
    await reflector.stop();
  });

  void test('a failing fresh list keeps the request pending until a list succeeds', async () => {
    const { state, lw } = server();
    let failing = false;
    const respond = lw.respond;
    lw.respond = (opts, call) => {
      if (failing) throw new KubeApiError('unavailable', { statusCode: 503 });
      return respond(opts, call);
    };
    const { reflector } = harness(lw);
    reflector.start();
    await lw.watchNo(0);
    failing = true;
    state.rv = 3;
    let resolved = false;
    const relisted = reflector.relist().then(() => {
      resolved = true;
    });
    await until(() => lw.listCalls.length >= 3, 'lists retried with backoff');
    assert.equal(resolved, false);
    assert.equal(lw.watches.length, 1, 'no watch from the stale resourceVersion meanwhile');
    failing = false;
    await relisted;
    assert.equal(reflector.store.get('ns/a')?.metadata.resourceVersion, '3');
    await reflector.stop();
  });

  void test('rejects when its signal aborts or the reflector stops; an abandoned request leaves the reflector watching', async () => {
    const { lw } = server();
    lw.respond = (_opts, call) =>
      call === 1 ? { items: [obj('a', '1')], resourceVersion: '1' } : new Promise(() => undefined);
    const { reflector } = harness(lw);
    reflector.start();
    await lw.watchNo(0);
    const ac = new AbortController();
    const aborted = reflector.relist(ac.signal);
    ac.abort(new Error('leadership lost'));
    await assert.rejects(aborted, /leadership lost/);
    await lw.watchNo(1);
    assert.equal(lw.listCalls.length, 1, 'an abandoned request costs no list; watching goes on');
    await assert.rejects(reflector.relist(AbortSignal.abort(new Error('already'))), /already/);
    const pending = reflector.relist();
    await until(() => lw.listCalls.length >= 2, 'the fresh list to start');
    await reflector.stop();
    await assert.rejects(pending, ReflectorStoppedError);
    await assert.rejects(reflector.relist(), ReflectorStoppedError);
  });
});
