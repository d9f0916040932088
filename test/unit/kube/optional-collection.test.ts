import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { optionalCollection } from '../../../src/kube/optional-collection.js';
import { reflectorHarness } from './reflector-harness.js';
import { ScriptedListerWatcher, obj, until, type Obj } from './scripted-lister-watcher.js';

const notFound = (): KubeApiError =>
  new KubeApiError('the server could not find the requested resource', { statusCode: 404 });

describe('optionalCollection', () => {
  test('a missing collection syncs as empty, and its objects appear once it exists', async () => {
    let installed = false;
    const lw = new ScriptedListerWatcher<Obj>(() => {
      if (!installed) throw notFound();
      return { items: [obj('default', '7')], resourceVersion: '7' };
    });
    const { reflector, events } = reflectorHarness(
      lw,
      { pageSize: 0 },
      {
        listerWatcher: optionalCollection(lw, 20),
      },
    );
    reflector.start();
    await reflector.waitForSync();
    assert.equal(reflector.store.size, 0);
    assert.equal(lw.watches.length, 0, 'nothing to watch: the wrapper waits instead');
    installed = true;
    // The wait ends as "expired": the reflector lists again and finds the object.
    await until(() => events.includes('add default@7'), 'the object after the CRD appeared');
    const watch = await lw.watchNo(0);
    assert.equal(watch.opts.resourceVersion, '7', 'then it watches as usual');
    await reflector.stop();
  });

  test('other list errors are not hidden', async () => {
    const wrapped = optionalCollection(
      new ScriptedListerWatcher<Obj>(() => {
        throw new KubeApiError('forbidden', { statusCode: 403 });
      }),
    );
    await assert.rejects(wrapped.list({}, new AbortController().signal), /forbidden/);
  });

  test('stopping while it waits ends the wait at once', async () => {
    const lw = new ScriptedListerWatcher<Obj>(() => {
      throw notFound();
    });
    const { reflector } = reflectorHarness(
      lw,
      { pageSize: 0 },
      {
        listerWatcher: optionalCollection(lw, 3_600_000),
      },
    );
    reflector.start();
    await reflector.waitForSync();
    await reflector.stop(); // would hang for an hour if the wait ignored the abort
    assert.equal(lw.listCalls.length, 1);
  });
});
