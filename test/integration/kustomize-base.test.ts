import type { KubernetesObject } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { ensureCrds } from '../../src/kube/crd.js';
import { KUSTOMIZATIONS } from '../../src/render/kustomize-base.js';
import { useControlPlane } from '../support/control-plane.js';
import { coreOf } from '../support/kcp.js';
import { prometheusOperatorCrds } from '../support/prometheus-operator-crds.js';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const plane = useControlPlane({ clusters: ['kcp'] });
const STALE = 'config/ differs from what rtb render prints: run `npm run render:config` and commit config/';

const keyOf = (o: KubernetesObject): string =>
  `${o.apiVersion ?? ''} ${o.kind ?? ''} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** The objects of a YAML stream, sorted by kind, namespace and name. */
function objectsOf(text: string): KubernetesObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null)
    .sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
}

function kubectl(): string {
  const path = plane().binaries.kubectl;
  assert.ok(path, 'kubectl is built with the control plane');
  return path;
}

describe('the kustomize base under config/', () => {
  for (const k of KUSTOMIZATIONS) {
    test(`kubectl kustomize config/${k.dir} renders what rtb ${k.resources.map((r) => r.args.join(' ')).join(' and rtb ')} prints`, async () => {
      const { stdout: built } = await run(kubectl(), ['kustomize', join(root, 'config', k.dir)], {
        maxBuffer: 64 * 1024 * 1024,
      });
      let printed = '';
      for (const r of k.resources) {
        const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...r.args], {
          cwd: root,
          maxBuffer: 64 * 1024 * 1024,
        });
        printed += stdout;
      }
      const fromBase = objectsOf(built);
      const fromCli = objectsOf(printed);
      assert.deepEqual(fromBase.map(keyOf), fromCli.map(keyOf), STALE);
      assert.deepEqual(fromBase, fromCli, STALE);
    });
  }

  test('applies to a KCP with a server-side dry run (the prometheus-operator CRDs installed)', async () => {
    const kcp = plane().cluster('kcp');
    await coreOf(kcp).createNamespace({ body: { metadata: { name: 'kcp-system' } } });
    await ensureCrds(kcp.kubeConfig(), prometheusOperatorCrds());
    const { stdout } = await run(
      kubectl(),
      [
        '--kubeconfig',
        kcp.kubeconfigPath,
        'apply',
        '--server-side',
        '--dry-run=server',
        '--field-manager=argocd-controller',
        '-k',
        join(root, 'config', 'kcp', 'with-monitoring'),
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const applied = stdout.trim().split('\n');
    const { stdout: built } = await run(
      kubectl(),
      ['kustomize', join(root, 'config', 'kcp', 'with-monitoring')],
      {
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const objects = objectsOf(built);
    assert.equal(applied.length, objects.length, stdout);
    for (const line of applied) assert.match(line, /serverside-applied \(server dry run\)$/);
    for (const o of objects)
      assert.ok(
        applied.some((l) => l.includes(`/${o.metadata?.name ?? ''} `)),
        `${keyOf(o)} was applied: ${stdout}`,
      );
  });
});
