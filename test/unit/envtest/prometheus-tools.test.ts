import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ControlPlaneError } from '../../../src/envtest/errors.js';
import { prometheusTools } from '../../../src/envtest/prometheus.js';

describe('the monitoring tests find Debian prometheus', () => {
  test('a missing program is named, with what to run', async () => {
    await assert.rejects(
      prometheusTools((tool) => Promise.resolve(tool === 'prometheus' ? '/usr/bin/prometheus' : undefined)),
      (e: unknown) =>
        e instanceof ControlPlaneError &&
        /need promtool: run scripts\/install-node-host\.sh .*prometheus package/.test(e.message),
    );
    assert.deepEqual(await prometheusTools((tool) => Promise.resolve(`/opt/${tool}`)), {
      prometheus: '/opt/prometheus',
      promtool: '/opt/promtool',
    });
  });
});
