import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { ReflectorStoppedError } from '../../../src/kube/reflector.js';
import { stripManagedFields, type ReflectorOptions } from '../../../src/kube/reflector-options.js';
import { reflectorHarness } from './reflector-harness.js';
import { ScriptedListerWatcher, obj, until, type Obj } from './scripted-lister-watcher.js';

/** A reflector over `lw` listing in pages of 2, its events and logs recorded; fast backoff unless overridden. */
const harness = (lw: ScriptedListerWatcher<Obj>, extra: Partial<ReflectorOptions<Obj>> = {}) =>
  reflectorHarness(lw, { pageSize: 2, logs: true, markRelistDeletes: true }, extra);

/** A lister-watcher of one object whose first `failures` lists fail with `error`. */
function listsFailingFirst(failures: number, error: KubeApiError): ScriptedListerWatcher<Obj> {
  let left = failures;
  return new ScriptedListerWatcher<Obj>((opts) => {
    if (left-- > 0) throw error;
    return oneObjectList()(opts);
  });
}

/** A reflector over a lister-watcher of one object, started. */
function started(extra: Partial<ReflectorOptions<Obj>> = {}) {
  const lw = oneObjectLw();
  const h = harness(lw, extra);
  h.reflector.start();
  return { lw, ...h };
}

const gone = (): KubeApiError =>
  new KubeApiError('too old resource version', { statusCode: 410, reason: 'Expired' });
const expiredStatus = { kind: 'Status', status: 'Failure', code: 410, reason: 'Expired', message: 'too old' };

/** A list answering with `items` at `rv`, in pages of the requested limit. */
function pagedList(items: () => Obj[], rv: () => string) {
  return (opts: { limit?: number; continue?: string }) => {
    const all = items();
    const start = opts.continue === undefined ? 0 : Number(opts.continue);
    const end = opts.limit === undefined ? all.length : start + opts.limit;
    return {
      items: all.slice(start, end),
      resourceVersion: rv(),
      continue: end < all.length ? String(end) : undefined,
    };
  };
}

/** A list answering `a@1` at resourceVersion 10. */
const oneObjectList = () =>
  pagedList(
    () => [obj('a', '1')],
    () => '10',
  );
/** A scripted lister-watcher whose lists answer `a@1` at resourceVersion 10. */
const oneObjectLw = () => new ScriptedListerWatcher<Obj>(oneObjectList());

void describe('Reflector', () => {
  void test('pages through the list, stores it atomically, then watches from its resourceVersion', async () => {
    const lw = new ScriptedListerWatcher<Obj>(
      pagedList(
        () => [obj('a', '3'), obj('b', '5'), obj('c', '7')],
        () => '10',
      ),
    );
    const { reflector, events } = harness(lw, { labelSelector: 'app=x', fieldSelector: 'metadata.name!=z' });
    assert.equal(reflector.hasSynced(), false);
    reflector.start();
    await reflector.waitForSync();
    assert.ok(reflector.hasSynced());
    assert.deepEqual(lw.listCalls, [
      {
        limit: 2,
        continue: undefined,
        labelSelector: 'app=x',
        fieldSelector: 'metadata.name!=z',
        maxBytes: Infinity,
      },
      {
        limit: 2,
        continue: '2',
        labelSelector: 'app=x',
        fieldSelector: 'metadata.name!=z',
        maxBytes: Infinity,
      },
    ]);
    assert.deepEqual(events, ['add a@3', 'add b@5', 'add c@7']);
    assert.deepEqual(reflector.store.keys().sort(), ['ns/a', 'ns/b', 'ns/c']);
    const w = await lw.watchNo(0);
    assert.equal(w.opts.resourceVersion, '10');
    assert.equal(w.opts.allowWatchBookmarks, true);
    assert.equal(w.opts.labelSelector, 'app=x');
    assert.equal(w.opts.fieldSelector, 'metadata.name!=z');
    assert.ok(w.opts.timeoutSeconds >= 5 && w.opts.timeoutSeconds <= 10, `timeout ${w.opts.timeoutSeconds}`);
    await reflector.stop();
  });

  void test('a transform shapes every listed and watched object before it is cached', async () => {
    const withFields = (o: Obj): Obj => ({
      ...o,
      metadata: { ...o.metadata, managedFields: [{ manager: 'm' }] } as Obj['metadata'],
    });
    const lw = new ScriptedListerWatcher<Obj>(
      pagedList(
        () => [withFields(obj('a', '3'))],
        () => '10',
      ),
    );
    const { reflector } = harness(lw, { transform: stripManagedFields });
    reflector.start();
    await reflector.waitForSync();
    assert.deepEqual(reflector.store.get('ns/a'), obj('a', '3'));
    const w = await lw.watchNo(0);
    w.emit('MODIFIED', withFields(obj('a', '4', 'x')));
    assert.deepEqual(reflector.store.get('ns/a'), obj('a', '4', 'x'));
    await reflector.stop();
  });

  void test('an expired continue token starts the list over, paged (an unpaged list has no byte bound)', async () => {
    let call = 0;
    const lw = new ScriptedListerWatcher<Obj>((opts) => {
      call++;
      if (call === 1)
        return { items: [obj('a', '1'), obj('b', '2')], resourceVersion: '10', continue: 'tok' };
      if (call === 2) throw gone();
      assert.equal(opts.limit, 2);
      assert.equal(opts.continue, undefined);
      return { items: [obj('a', '1'), obj('c', '3')], resourceVersion: '20' };
    });
    const { reflector, events } = harness(lw);
    reflector.start();
    await reflector.waitForSync();
    assert.equal(lw.listCalls.length, 3);
    assert.deepEqual(events, ['add a@1', 'add c@3'], 'no object from the abandoned pages leaks');
    assert.equal((await lw.watchNo(0)).opts.resourceVersion, '20');
    await reflector.stop();
  });

  void test('watch events update the store and fire handlers; the resourceVersion follows them', async () => {
    const { lw, reflector, events } = started();
    const w = await lw.watchNo(0);
    w.emit('ADDED', obj('b', '11'));
    w.emit('MODIFIED', obj('a', '12', 'changed'));
    w.emit('DELETED', obj('b', '13'));
    w.emit('DELETED', obj('never-seen', '14'));
    w.emit('ADDED', { metadata: { name: 'cluster-scoped', resourceVersion: '15' } });
    assert.deepEqual(events, ['add a@1', 'add b@11', 'update a 1->12', 'delete b', 'add cluster-scoped@15']);
    assert.equal(reflector.store.get('ns/a')?.data, 'changed');
    assert.equal(reflector.store.has('ns/b'), false);
    assert.ok(reflector.store.has('cluster-scoped'));
    assert.equal(reflector.lastSyncResourceVersion(), '15');
    await reflector.stop();
  });

  void test('a bookmark advances the resourceVersion without events; a normal end re-watches from it', async () => {
    const { lw, reflector, events } = started({ minHealthyWatchMs: 0 });
    const w0 = await lw.watchNo(0);
    w0.emit('BOOKMARK', {
      kind: 'ConfigMap',
      metadata: { name: '', resourceVersion: '42' },
    });
    assert.deepEqual(events, ['add a@1']);
    assert.equal(reflector.lastSyncResourceVersion(), '42');
    w0.end();
    const w1 = await lw.watchNo(1);
    assert.equal(w1.opts.resourceVersion, '42');
    assert.equal(lw.listCalls.length, 1, 'a normal end does not relist');
    await reflector.stop();
  });

  void test('watch ERROR 410 relists and delivers the difference, deletions included', async () => {
    let listNo = 0;
    const lw = new ScriptedListerWatcher<Obj>(() => {
      listNo++;
      return listNo === 1
        ? { items: [obj('a', '1'), obj('b', '2'), obj('c', '3')], resourceVersion: '10' }
        : { items: [obj('a', '1'), obj('b', '20'), obj('d', '21')], resourceVersion: '30' };
    });
    const { reflector, events } = harness(lw, { pageSize: 0 });
    reflector.start();
    const w0 = await lw.watchNo(0);
    events.length = 0;
    w0.emit('ERROR', expiredStatus);
    const w1 = await lw.watchNo(1);
    assert.ok(w0.signal.aborted, 'the watch that reported the error is closed');
    assert.equal(lw.listCalls.length, 2);
    assert.deepEqual(
      events,
      ['update b 2->20', 'add d@21', 'delete c (relist)'],
      'unchanged a yields no update',
    );
    assert.equal(w1.opts.resourceVersion, '30');
    assert.deepEqual(reflector.store.keys().sort(), ['ns/a', 'ns/b', 'ns/d']);
    await reflector.stop();
  });

  void test('an HTTP 410 or a too-large resourceVersion on watch relists too', async () => {
    const { lw, reflector } = started();
    (await lw.watchNo(0)).fail(gone());
    await lw.watchNo(1);
    assert.equal(lw.listCalls.length, 2);
    (await lw.watchNo(1)).emit('ERROR', {
      kind: 'Status',
      code: 504,
      reason: 'Timeout',
      message: 'Too large resource version: 99, current: 10',
      details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
    });
    await lw.watchNo(2);
    assert.equal(lw.listCalls.length, 3);
    await reflector.stop();
  });

  void test('the watchdog restarts a silent watch from the same resourceVersion', async () => {
    const { lw, reflector, logs } = started({ inactivityTimeoutMs: 30 });
    const w0 = await lw.watchNo(0);
    const w1 = await lw.watchNo(1);
    assert.ok(w0.signal.aborted);
    assert.equal(w1.opts.resourceVersion, '10');
    assert.equal(lw.listCalls.length, 1, 'a silent watch is re-watched, not relisted');
    assert.ok(logs.some((l) => l.msg.includes('silent')));
    await reflector.stop();
  });

  void test('events, bookmarks included, keep the watchdog from firing', async () => {
    const { lw, reflector } = started({ inactivityTimeoutMs: 250 });
    const w0 = await lw.watchNo(0);
    for (let i = 0; i < 40; i++) {
      w0.emit('BOOKMARK', { metadata: { name: '', resourceVersion: String(11 + i) } });
      await sleep(10);
    }
    assert.equal(w0.signal.aborted, false);
    assert.equal(lw.watches.length, 1);
    await reflector.stop();
  });

  void test('errors back off exponentially; a healthy watch resets the backoff', async () => {
    const lw = listsFailingFirst(2, new KubeApiError('etcd is sad', { statusCode: 500 }));
    let failWatches = 3;
    lw.onWatch = (s) => {
      if (failWatches-- > 0) s.fail(new KubeApiError('connection reset', { cause: new Error('ECONNRESET') }));
    };
    const { reflector, logs } = harness(lw);
    reflector.start();
    const w3 = await lw.watchNo(3);
    const delays = () => logs.filter((l) => l.delayMs !== undefined && l.delayMs > 0).map((l) => l.delayMs);
    // Two list failures, then three watch failures: one growing sequence (5, 10, 20, 40, 40 capped).
    assert.deepEqual(delays(), [5, 10, 20, 40, 40]);
    assert.ok(
      lw.watches.every((w) => w.opts.resourceVersion === '10'),
      'errors re-watch from the same RV',
    );
    assert.equal(lw.listCalls.length, 3);
    // A watch that delivered something is healthy: the next failure starts from the base again.
    w3.emit('ADDED', obj('b', '11'));
    w3.fail(new KubeApiError('internal error', { statusCode: 500 }));
    await lw.watchNo(4);
    assert.deepEqual(delays(), [5, 10, 20, 40, 40, 5]);
    const w4 = await lw.watchNo(4);
    w4.emit('ERROR', { kind: 'Status', code: 500, reason: 'InternalError', message: 'boom' });
    await lw.watchNo(5);
    assert.equal(lw.listCalls.length, 3, 'a non-410 ERROR event re-watches without relisting');
    assert.equal(lw.watches[5]!.opts.resourceVersion, '11');
    await reflector.stop();
  });

  void test('stop() ends the watch and the loop; nothing starts afterwards', async () => {
    const { lw, reflector } = started();
    const w0 = await lw.watchNo(0);
    await reflector.stop();
    assert.ok(w0.signal.aborted);
    await sleep(20);
    assert.equal(lw.watches.length, 1);
    assert.equal(lw.listCalls.length, 1);
    await reflector.waitForSync(); // it did sync before it stopped
    await reflector.stop(); // idempotent
  });

  void test('stop() during a backoff or before sync ends promptly and fails waiters', async () => {
    const lw = new ScriptedListerWatcher<Obj>(() => {
      throw new KubeApiError('forbidden', { statusCode: 403 });
    });
    const { reflector } = harness(lw, { backoff: { baseMs: 60_000, maxMs: 60_000 } });
    reflector.start();
    const synced = reflector.waitForSync();
    await until(() => lw.listCalls.length === 1, 'first list');
    const t0 = Date.now();
    await reflector.stop();
    assert.ok(Date.now() - t0 < 5_000, 'the 60 s backoff sleep was cut short');
    await assert.rejects(synced, ReflectorStoppedError);
    assert.equal(reflector.hasSynced(), false);
  });

  void test('waitForSync honours its abort signal', async () => {
    const lw = new ScriptedListerWatcher<Obj>(() => new Promise(() => undefined));
    const { reflector } = harness(lw);
    reflector.start();
    const ac = new AbortController();
    const waiting = reflector.waitForSync(ac.signal);
    ac.abort();
    await assert.rejects(waiting);
    await reflector.stop();
  });

  void test('a throwing handler does not stop the reflector; late handlers get a replay', async () => {
    const lw = oneObjectLw();
    const { reflector, events } = harness(lw);
    reflector.addEventHandler({
      onAdd: () => {
        throw new Error('bad handler');
      },
    });
    reflector.start();
    const w0 = await lw.watchNo(0);
    w0.emit('ADDED', obj('b', '11'));
    assert.deepEqual(events, ['add a@1', 'add b@11']);
    const late: string[] = [];
    reflector.addEventHandler({ onAdd: (o) => late.push(o.metadata.name) });
    assert.deepEqual(late.sort(), ['a', 'b']);
    await reflector.stop();
  });

  void test('a throwing logger does not break the loop', async () => {
    const lw = listsFailingFirst(2, new KubeApiError('unavailable', { statusCode: 503 }));
    const throwing = (): never => {
      throw new Error('log sink closed');
    };
    const { reflector } = harness(lw, { logger: { debug: throwing, warn: throwing } });
    reflector.start();
    await reflector.waitForSync();
    await reflector.stop();
  });
});
