import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { prometheusTools, runPromtool, type PrometheusTools } from '../../src/envtest/prometheus.js';
import { renderMonitoring, type RenderedRule } from '../../src/monitoring/monitoring-manifests.js';
import { defaultMonitoringOptions } from '../../src/monitoring/monitoring-options.js';
import { alertCases } from '../support/alert-cases.js';

const options = defaultMonitoringOptions();
const monitoring = renderMonitoring(options);
const groups = [monitoring.kcp, monitoring.runtime].flatMap((s) => s.prometheusRule.spec.groups);
const rules: RenderedRule[] = groups.flatMap((g) => g.rules);

let tools: PrometheusTools;
let dir = '';

/** promtool's unit-test file: one test group per scenario, each evaluating its alert. */
function unitTests(): object {
  const tests = alertCases(options).flatMap((c) =>
    c.scenarios.map((s) => ({
      interval: '1m',
      input_series: s.series,
      alert_rule_test: [
        {
          eval_time: `${s.evalMinutes}m`,
          alertname: c.alert,
          exp_alerts: s.expect.map((e) => {
            const rule = rules.find((r) => r.alert === c.alert && r.labels.severity === e.severity);
            assert.ok(rule, `${c.alert} has a ${e.severity} rule`);
            return { exp_labels: { ...rule.labels, ...e.labels }, exp_annotations: rule.annotations };
          }),
        },
      ],
    })),
  );
  return { rule_files: ['rules.yaml'], evaluation_interval: '1m', tests };
}

describe('the alerts under promtool (Debian prometheus package)', () => {
  before(async () => {
    tools = await prometheusTools();
    dir = await mkdtemp(join(tmpdir(), 'rtb-rules-'));
    await writeFile(join(dir, 'rules.yaml'), stringify({ groups }));
    await writeFile(join(dir, 'tests.yaml'), stringify(unitTests()));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('promtool check rules accepts every rule', async () => {
    const result = await runPromtool(tools, ['check', 'rules', 'rules.yaml'], dir);
    assert.ok(result.ok, result.output);
    assert.match(result.output, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  test('every alert has a scenario that fires it and one that keeps it silent', () => {
    const cases = new Map(alertCases(options).map((c) => [c.alert, c]));
    for (const alert of new Set(rules.map((r) => r.alert))) {
      const scenarios = cases.get(alert)?.scenarios ?? [];
      assert.ok(
        scenarios.some((s) => s.expect.length > 0),
        `${alert} has a firing scenario`,
      );
      assert.ok(
        scenarios.some((s) => s.expect.length === 0),
        `${alert} has a silent scenario`,
      );
      for (const severity of new Set(rules.filter((r) => r.alert === alert).map((r) => r.labels.severity)))
        assert.ok(
          scenarios.some((s) => s.expect.some((e) => e.severity === severity)),
          `${alert} fires at ${severity ?? '?'} in a scenario`,
        );
    }
  });

  test('promtool test rules: each scenario fires exactly what it expects', async () => {
    const result = await runPromtool(tools, ['test', 'rules', 'tests.yaml'], dir);
    assert.ok(result.ok, result.output);
    assert.match(result.output, /SUCCESS/);
  });
});
