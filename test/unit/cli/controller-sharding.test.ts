import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runController, type ControllerFlags } from '../../../src/cli/commands/controller-action.js';
import { FlagError } from '../../../src/cli/flag-values.js';

const flags = (over: Partial<ControllerFlags>): ControllerFlags => ({
  mode: 'annotate',
  namespace: 'kcp-system',
  pullSecret: 'pull',
  configMap: 'cm',
  configKey: 'k',
  signal: 'annotation',
  coalesce: '2s',
  resync: '5m',
  stateConfigMap: 'state',
  metricsPort: '8080',
  metricsHost: '127.0.0.1',
  tlsMinVersion: '1.3',
  leaderElect: true,
  leaderElectionId: 'lease',
  leaseDuration: '15s',
  renewDeadline: '10s',
  retryPeriod: '2s',
  logLevel: 'silent',
  caRenewBefore: '720h',
  caGrace: '168h',
  runtimeTimeout: '10s',
  runtimeDeadline: '30s',
  fullResyncEvery: '6',
  rolloutPolicy: 'default',
  autoRollback: true,
  certValidity: '2160h',
  certRenewBefore: '720h',
  ...over,
});

describe('rtb controller --sharding', () => {
  test('is refused outside direct mode, before anything connects', async () => {
    await assert.rejects(runController(flags({ sharding: true })), (err: unknown) => {
      assert.ok(err instanceof FlagError);
      assert.match(err.message, /direct mode only/);
      return true;
    });
  });
});
