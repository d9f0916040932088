import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { PreviewInputError, previewMutation } from '../../../src/cli/mutate-preview.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8');
const podText = fixture('seed-pod-before.yaml');
const configText = fixture('seed-config.json');

describe('rtb mutate (preview)', () => {
  test('the seed Pod comes out as the seed after-manifest', () => {
    const out = parse(previewMutation({ podText, configText })) as unknown;
    assert.deepEqual(out, parse(fixture('seed-pod-after.yaml')));
  });

  test('-o patch prints the JSON patch, -o json the Pod as JSON', () => {
    const patch = JSON.parse(previewMutation({ podText, configText, output: 'patch' })) as {
      op: string;
      path: string;
    }[];
    assert.ok(patch.length > 0);
    assert.ok(patch.every((op) => ['add', 'replace'].includes(op.op)));
    const pod = JSON.parse(previewMutation({ podText, configText, output: 'json' })) as { kind: string };
    assert.equal(pod.kind, 'Pod');
  });

  test('--operation UPDATE rewrites only images', () => {
    const pod = parse(previewMutation({ podText, configText, operation: 'UPDATE' })) as {
      spec: { containers: { image: string; env?: unknown }[]; volumes?: unknown };
    };
    assert.equal(pod.spec.containers[0]!.image, 'ghcr.io/kyma-project/rt-bootstrapper/pause:e2e');
    assert.equal(pod.spec.containers[0]!.env, undefined);
    assert.equal(pod.spec.volumes, undefined);
  });

  test('--namespace annotations opt a plain Pod in', () => {
    const plain =
      'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: replace.me/x:1}]}\n';
    const ns =
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  annotations: {"rt-cfg.kyma-project.io/alter-img-registry": "true"}\n';
    const pod = parse(previewMutation({ podText: plain, configText, namespaceText: ns })) as {
      spec: { containers: { image: string }[] };
    };
    assert.equal(pod.spec.containers[0]?.image, 'ghcr.io/x:1');
    const without = parse(previewMutation({ podText: plain, configText })) as {
      spec: { containers: { image: string }[] };
    };
    assert.equal(without.spec.containers[0]?.image, 'replace.me/x:1');
  });

  for (const [what, input, reason] of [
    ['not a Pod', { podText: 'kind: Deployment\napiVersion: apps/v1\n', configText }, /not a Pod/],
    ['invalid YAML', { podText: 'kind: [Pod', configText }, /not valid YAML/],
    [
      'invalid config',
      { podText, configText: '{"availableFeatures":["rt-cfg.kyma-project.io/x"]}' },
      /invalid config: availableFeatures\[0\]/,
    ],
    ['config not JSON', { podText, configText: '{' }, /invalid config/],
    ['a namespace that is not one', { podText, configText, namespaceText: 'kind: Pod' }, /not a Namespace/],
  ] as const) {
    test(`refuses ${what} with a reason`, () => {
      assert.throws(
        () => previewMutation(input),
        (e: unknown) => e instanceof PreviewInputError && reason.test(e.message),
      );
    });
  }

  test('the CLI exits 2 with a one-line reason on bad input, 0 on good input', () => {
    const run = (args: string[], input?: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'mutate', ...args], {
        input,
        encoding: 'utf8',
      });
    const bad = run(['-f', '-', '--config', 'test/fixtures/seed-config.json'], 'kind: Service\n');
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr.trim().split('\n').length, 1);
    assert.match(bad.stderr, /^rtb mutate: the input is not a Pod/);
    const missing = run(['-f', 'no-such-file.yaml', '--config', 'test/fixtures/seed-config.json']);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /cannot read the Pod no-such-file\.yaml: ENOENT/);
    const good = run([
      '-f',
      'test/fixtures/seed-pod-before.yaml',
      '--config',
      'test/fixtures/seed-config.json',
      '-o',
      'json',
    ]);
    assert.equal(good.status, 0, good.stderr);
    assert.match(good.stdout, /"ghcr.io\/kyma-project\/rt-bootstrapper\/pause:e2e"/);
    assert.equal(good.stderr, '', 'the seed config has nothing to warn about');
  });

  test('the CLI: --landscape as rtb webhook; config warnings go to stderr', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rtb-mutate-'));
    try {
      const config = join(dir, 'config.json');
      writeFileSync(
        config,
        JSON.stringify({
          overrides: { nodot: 'ghcr.io' },
          availableFeatures: ['rt-cfg.kyma-project.io/set-landscape'],
        }),
      );
      const pod =
        'apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {"rt-cfg.kyma-project.io/set-landscape": "true"}}\nspec: {containers: [{name: c, image: nginx}]}\n';
      const run = (args: string[]) =>
        spawnSync(
          process.execPath,
          [
            '--import',
            'tsx',
            'src/cli/main.ts',
            'mutate',
            '-f',
            '-',
            '--config',
            config,
            '-o',
            'json',
            ...args,
          ],
          {
            input: pod,
            encoding: 'utf8',
          },
        );
      const refused = run([]);
      assert.equal(refused.status, 2);
      assert.match(
        refused.stderr,
        /^rtb mutate: invalid config: availableFeatures\[0\]: .*no landscape is known/,
      );
      const ok = run(['--landscape', 'NS2']);
      assert.equal(ok.status, 0, ok.stderr);
      const out = JSON.parse(ok.stdout) as { spec: { containers: { env: unknown }[] } };
      assert.deepEqual(out.spec.containers[0]?.env, [{ name: 'KYMA_LANDSCAPE', value: 'NS2' }]);
      assert.match(ok.stderr, /^rtb mutate: warning: config overrides\.nodot: key: never matches/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the CLI honours overrideExclusions, and refuses a bad entry naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rtb-mutate-'));
    try {
      const write = (exclusions: unknown): string => {
        const path = join(dir, 'config.json');
        const seed = JSON.parse(configText) as Record<string, unknown>;
        writeFileSync(path, JSON.stringify({ ...seed, overrideExclusions: exclusions }));
        return path;
      };
      const two =
        'apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {"rt-cfg.kyma-project.io/all": "true"}}\n' +
        'spec: {containers: [{name: kept, image: replace.me/kyma-project/keep:1}, {name: moved, image: replace.me/kyma-project/app:1}]}\n';
      const run = (config: string) =>
        spawnSync(
          process.execPath,
          ['--import', 'tsx', 'src/cli/main.ts', 'mutate', '-f', '-', '--config', config, '-o', 'json'],
          { input: two, encoding: 'utf8' },
        );
      const ok = run(write(['replace.me/kyma-project/keep']));
      assert.equal(ok.status, 0, ok.stderr);
      const out = JSON.parse(ok.stdout) as {
        spec: { containers: { image: string; env?: unknown }[]; imagePullSecrets?: unknown };
      };
      assert.deepEqual(
        out.spec.containers.map((c) => c.image),
        ['replace.me/kyma-project/keep:1', 'ghcr.io/kyma-project/app:1'],
      );
      assert.ok(out.spec.containers[0]?.env, 'the excluded container still gets the other features');
      const bad = run(write(['nginx', 'replace.me']));
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /^rtb mutate: invalid config: overrideExclusions\[1\]: .*not a registry/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('warnings reach onWarning: doubtful config fields and skipped manipulations', () => {
    const warnings: string[] = [];
    previewMutation({
      podText:
        'apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {"rt-cfg.kyma-project.io/alter-img-registry": "true"}}\nspec: {containers: [{name: c, image: "replace.me/x@md5:00000000000000000000000000000000"}]}\n',
      configText: JSON.stringify({
        overrides: { 'replace.me': 'ghcr.io', bad: 'x' },
        availableFeatures: ['rt-cfg.kyma-project.io/alter-img-registry'],
      }),
      onWarning: (w) => warnings.push(w),
    });
    assert.equal(warnings.length, 2, JSON.stringify(warnings));
    assert.match(warnings[0] ?? '', /^config overrides\.bad: key: never matches/);
    assert.match(warnings[1] ?? '', /image left unchanged: .*unsupported digest algorithm "md5"/);
  });
});
