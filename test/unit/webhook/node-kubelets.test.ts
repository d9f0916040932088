import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KubeApiError, statusCodeOf } from '../../../src/kube/kube-errors.js';
import type { ListerWatcher } from '../../../src/kube/lister-watcher.js';
import { forbiddenAsNone } from '../../../src/webhook/trust-capability/node-kubelets.js';

/** A lister whose list answers `status` (200: one node), and whose watch ends at once. */
function lister(state: { status: number; watched: number }): ListerWatcher<{ metadata: { name: string } }> {
  return {
    list: () =>
      state.status === 200
        ? Promise.resolve({ items: [{ metadata: { name: 'n' } }], resourceVersion: '7' })
        : Promise.reject(new KubeApiError('nodes', { statusCode: state.status })),
    watch: () => {
      state.watched++;
      return Promise.resolve();
    },
  };
}

describe('nodes the webhook may not list', () => {
  test('a 403 reads as no node (the webhook mounts as before) and is listed again; other failures fail', async () => {
    const state = { status: 403, watched: 0 };
    const seen: boolean[] = [];
    const lw = forbiddenAsNone(lister(state), (f) => seen.push(f), 1);
    const signal = new AbortController().signal;
    const empty = await lw.list({}, signal);
    assert.deepEqual(empty.items, []);
    // Its watch waits, then ends as expired: the reflector lists again.
    const ended = await lw
      .watch(
        { resourceVersion: empty.resourceVersion, timeoutSeconds: 60, allowWatchBookmarks: true },
        () => undefined,
        signal,
      )
      .then(
        () => undefined,
        (error: unknown) => statusCodeOf(error),
      );
    assert.equal(ended, 410);
    assert.equal(state.watched, 0, 'nothing watched while forbidden');
    state.status = 200;
    const listed = await lw.list({}, signal);
    assert.equal(listed.items.length, 1);
    await lw.watch(
      { resourceVersion: listed.resourceVersion, timeoutSeconds: 60, allowWatchBookmarks: true },
      () => undefined,
      signal,
    );
    assert.equal(state.watched, 1);
    assert.deepEqual(seen, [true, false]);
    state.status = 500;
    await assert.rejects(lw.list({}, signal), (e: unknown) => statusCodeOf(e) === 500);
  });
});
