import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { registerControllerCommand } from '../../../src/cli/commands/controller.js';
import { CONTROLLER_LEASE_NAME, DEFAULT_STATE_CONFIG_MAP } from '../../../src/api/kcp-objects.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

// Static imports that load a module at run time: `import type` and `export type` load nothing,
// `import()` inside an action is the point.
const STATIC_IMPORT = /^(?:import|export)\s+(?!type\s)(?:[^;]*?\sfrom\s+)?'([^']+)'/gm;

/** Every package reached through static imports from `entry` (a file under src/), with the path to it. */
function staticPackages(entry: string): Map<string, string[]> {
  const packages = new Map<string, string[]>();
  const seen = new Set<string>();
  const walk = (file: string, chain: string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const [, spec = ''] of text.matchAll(STATIC_IMPORT)) {
      const here = [...chain, relative(ROOT, file)];
      if (spec.startsWith('.')) walk(join(dirname(file), spec.replace(/\.js$/, '.ts')), here);
      else if (!spec.startsWith('node:') && !packages.has(spec)) packages.set(spec, here);
    }
  };
  walk(join(ROOT, entry), []);
  return packages;
}

const HEAVY = ['@kubernetes/client-node', '@peculiar/x509', 'reflect-metadata', 'yaml'];

test('registering the commands loads none of their implementations', () => {
  const reached = staticPackages('src/cli/main.ts');
  for (const heavy of HEAVY) {
    const chain = [...reached].find(([spec]) => spec === heavy || spec.startsWith(`${heavy}/`));
    assert.equal(chain, undefined, `${heavy} is loaded by every command: ${chain?.[1].join(' -> ') ?? ''}`);
  }
});

test('rtb webhook does not load @kubernetes/client-node', () => {
  const reached = staticPackages('src/cli/commands/webhook-action.ts');
  for (const [spec, chain] of reached)
    assert.ok(!spec.startsWith('@kubernetes/client-node'), `${spec} via ${chain.join(' -> ')}`);
});

test('the controller flags default to the constants their implementation uses', () => {
  const program = new Command();
  registerControllerCommand(program);
  const controller = program.commands.find((c) => c.name() === 'controller');
  const defaultOf = (flag: string): unknown => controller?.options.find((o) => o.long === flag)?.defaultValue;
  assert.equal(defaultOf('--state-config-map'), DEFAULT_STATE_CONFIG_MAP);
  assert.equal(defaultOf('--leader-election-id'), CONTROLLER_LEASE_NAME);
});
