import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ESCAPED_PODS_KEY,
  ESCAPED_REPORT_MAX_CHARS,
  writeEscaped,
} from '../../../../src/api/escaped-pods.js';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { readReport } from '../../../../src/api/webhook-status.js';
import { recordEscaped } from '../../../../src/controller/direct/escaped-pods-status.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import { fleetStatus, formatFleetStatus } from '../../../../src/controller/rollout/fleet-status.js';
import { escapedPodsReport } from '../../../support/escaped-pods-report.js';

const rb: RuntimeBootstrapper = {
  metadata: { name: 'r1', namespace: 'kcp-system', generation: 1 },
  spec: { runtimeID: 'r1' },
};
const NOW = new Date('2026-01-01T00:00:00Z');
const count = escapedPodsReport();
const cm = (data: Record<string, string>) => ({ data });

describe('the escaped-Pod count in the status', () => {
  test('a count with escaped Pods: the field and condition EscapedPods True', () => {
    const status = new StatusBuilder(rb, NOW);
    recordEscaped(status, readReport(cm({ [ESCAPED_PODS_KEY]: writeEscaped(count) })));
    const s = status.build();
    assert.deepEqual(s.escapedPods, {
      pods: 3,
      reasons: { unstamped: 3, registry: 2 },
      bare: 1,
      repair: false,
      restarted: 0,
      revision: 'v1',
      reportedAt: '2026-01-01T00:00:00.000Z',
    });
    const c = status.get('EscapedPods');
    assert.ok(c);
    assert.equal(c.status, 'True');
    assert.equal(c.reason, 'Found');
    assert.match(
      c.message,
      /^3 running Pod\(s\) do not follow the set in force \(unstamped 3, registry 2\); 1 without an owner/,
    );
  });

  test('none: False; no count: the field and the condition dropped', () => {
    const status = new StatusBuilder(rb, NOW);
    recordEscaped(
      status,
      readReport(cm({ [ESCAPED_PODS_KEY]: writeEscaped({ ...count, pods: 0, bare: 0, reasons: {} }) })),
    );
    assert.equal(status.get('EscapedPods')?.status, 'False');
    assert.equal(status.build().escapedPods?.reasons, undefined);
    recordEscaped(status, readReport(cm({})));
    assert.equal(status.get('EscapedPods'), undefined);
    assert.equal(status.build().escapedPods, undefined);
  });

  test('a count out of bounds is not read, and the report says so', () => {
    const report = readReport(cm({ [ESCAPED_PODS_KEY]: JSON.stringify({ ...count, pods: -1 }) }));
    assert.equal(report.escapedPods, undefined);
    assert.ok(report.refused);
    assert.equal(report.refused.reason, 'OutOfBounds');
    assert.match(report.refused.message, /escapedPods/);
    const long = readReport(cm({ [ESCAPED_PODS_KEY]: 'x'.repeat(ESCAPED_REPORT_MAX_CHARS + 1) }));
    assert.equal(long.escapedPods, undefined);
  });
});

describe('rtb status: escaped Pods', () => {
  test('lists the runtimes with escaped Pods, by reason, and no other', () => {
    const withEscaped = new StatusBuilder(rb, NOW);
    recordEscaped(withEscaped, readReport(cm({ [ESCAPED_PODS_KEY]: writeEscaped(count) })));
    const other = { ...rb, metadata: { name: 'r2', namespace: 'kcp-system' }, spec: { runtimeID: 'r2' } };
    const none = new StatusBuilder(other, NOW);
    recordEscaped(none, readReport(cm({ [ESCAPED_PODS_KEY]: writeEscaped({ ...count, pods: 0, bare: 0 }) })));
    const f = fleetStatus(
      [
        { ...rb, status: withEscaped.build() },
        { ...other, status: none.build() },
      ],
      undefined,
    );
    assert.deepEqual(f.escaped, [
      { runtime: 'r1', pods: 3, reasons: { unstamped: 3, registry: 2 }, bare: 1, repair: false },
    ]);
    const lines = formatFleetStatus(f).split('\n');
    const at = lines.findIndex((l) => l.startsWith('Escaped Pods'));
    assert.ok(at >= 0);
    assert.equal(lines[at + 1], '  r1  3 Pod(s) (unstamped 3, registry 2), 1 bare, repair off');
    assert.ok(!lines.some((l) => l.startsWith('  r2')));
  });
});
