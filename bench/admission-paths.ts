// Pod creation latency by admission path (issue 47): the admission policy, the webhook, neither.
//
//   npx tsx bench/admission-paths.ts
//
// One API server (the default minor's, which serves MutatingAdmissionPolicy; 1.34 with its gate
// through RTB_TEST_KUBERNETES) and three namespaces, one per arm:
//   neither  no admission of ours matches the namespace;
//   webhook  the webhook registration (renderWebhookManifests with `url` and `caBundle`,
//            failurePolicy Fail) matches it, served by `rtb webhook` in its own process, as
//            bench/pod-create-latency.ts runs it;
//   policy   the admission policy rendered by renderAdmissionPolicy from the same config
//            (parameters, policy, binding) matches it; the webhook does not.
// Both registrations exist throughout, each narrowed to its own namespace by a selector, so every
// arm pays the same selector checks and the arms can be interleaved request by request on the
// same API server: same seed Pod, same count, the order rotating. Every stored Pod is checked: in
// the webhook and policy arms it must carry the `defaulted` mark and the rewritten image, in the
// neither arm neither. The figures are printed, never asserted.
//
// Environment (for trial runs): BENCH_PODS (300), BENCH_WARMUP_PODS (50).
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { loadavg } from 'node:os';
import { parseWebhookConfig } from '../src/api/webhook-config.js';
import { ControlPlane } from '../src/envtest/control-plane.js';
import { defaultKubernetesVersion, KUBERNETES_VERSIONS } from '../src/envtest/kubernetes-versions.js';
import { applyObjects } from '../src/kube/apply.js';
import { admissionPolicyManifestList, renderAdmissionPolicy } from '../src/render/admission-policy.js';
import { renderWebhookManifests } from '../src/render/webhook-manifests.js';
import { envNumber, isMain, say as print } from './support/env.js';
import {
  awaitAdmission,
  interleavedCreates,
  podNamed,
  type CreateSeries,
} from './support/interleaved-creates.js';
import { PodClient } from './support/pod-client.js';
import { buildChildren, scratchDir } from './support/processes.js';
import { ms, type LatencySummary } from './support/stats.js';
import {
  applyWebhookSources,
  seedConfigText,
  seedPod,
  startWebhookProcess,
  writeServingTls,
  type ServerProcess,
} from './support/webhook-under-test.js';

/** The arms, in the order of the table; `neither` is the baseline. */
export const ADMISSION_ARMS = ['neither', 'webhook', 'policy'] as const;

/** One arm of the benchmark. */
export type AdmissionArm = (typeof ADMISSION_ARMS)[number];

/** What the admission-path benchmark measured. */
export interface AdmissionPathFigures {
  readonly pods: number;
  readonly kubernetesVersion: string;
  readonly arms: Readonly<Record<AdmissionArm, LatencySummary>>;
  /** Whether the policy stored the same Pod as the webhook (the seed Pod, dry run). */
  readonly samePod: boolean;
  /** The 1-minute load average before and after the measurement. */
  readonly load: { readonly before: number; readonly after: number };
}

/** The seed config's override `replace.me` → `ghcr.io` applied to the seed Pod's image. */
const REWRITTEN_IMAGE = 'ghcr.io/kyma-project/rt-bootstrapper/pause:e2e';

const namespaceOf = (arm: AdmissionArm): string => `rtb-bench-${arm}`;

/** Only the namespace of `arm`, on top of what the rendered selector already keeps out. */
const onlyNamespace = (arm: AdmissionArm): { key: string; operator: string; values: string[] } => ({
  key: 'kubernetes.io/metadata.name',
  operator: 'In',
  values: [namespaceOf(arm)],
});

/** Runs the benchmark; prints as it goes and returns the figures. */
export async function runAdmissionPaths(say: (line: string) => void = print): Promise<AdmissionPathFigures> {
  const pods = envNumber('BENCH_PODS', 300);
  const warmup = envNumber('BENCH_WARMUP_PODS', 50);
  const version = defaultKubernetesVersion();
  const { api, apiserverArgs } = KUBERNETES_VERSIONS[version].admissionPolicy;

  say('== Pod creation latency by admission path (issue 47) ==');
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-bench-admission-');
  let plane: ControlPlane | undefined;
  let webhook: ServerProcess | undefined;
  let client: PodClient | undefined;
  try {
    plane = await ControlPlane.start({ clusters: ['runtime'], kubernetes: version, apiserverArgs });
    const cluster = plane.cluster('runtime');
    const kc = cluster.kubeConfig();
    say(
      `one cluster: kube-apiserver ${plane.binaries.kubernetesVersion} (MutatingAdmissionPolicy ${api}), ` +
        `etcd ${plane.binaries.etcdVersion}, node ${process.version}`,
    );
    await applyWebhookSources(kc);
    await applyObjects(
      kc,
      ADMISSION_ARMS.map((arm) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: namespaceOf(arm) },
      })),
    );
    const tls = await writeServingTls(scratch.dir);
    webhook = await startWebhookProcess(scripts, cluster, tls, scratch.dir);
    client = await PodClient.forCluster(kc);
    const template = seedPod();
    const series: Readonly<Record<AdmissionArm, CreateSeries>> = {
      neither: { client, pod: template, namespace: namespaceOf('neither'), mutatedExpected: false },
      webhook: {
        client,
        pod: template,
        namespace: namespaceOf('webhook'),
        mutatedExpected: true,
        image: REWRITTEN_IMAGE,
      },
      policy: {
        client,
        pod: template,
        namespace: namespaceOf('policy'),
        mutatedExpected: true,
        image: REWRITTEN_IMAGE,
      },
    };

    const registration: V1MutatingWebhookConfiguration = renderWebhookManifests({
      image: 'local',
      url: webhook.url,
      caBundlePem: tls.caPem,
      failurePolicy: 'Fail',
    }).mutatingWebhookConfiguration;
    for (const w of registration.webhooks ?? []) {
      w.namespaceSelector = {
        matchExpressions: [...(w.namespaceSelector?.matchExpressions ?? []), onlyNamespace('webhook')],
      };
    }
    const policy = renderAdmissionPolicy(parseWebhookConfig(JSON.parse(seedConfigText())), {
      apiVersion: api,
    });
    const bindingSpec = policy.binding.spec as Record<string, unknown>;
    bindingSpec.matchResources = { namespaceSelector: { matchExpressions: [onlyNamespace('policy')] } };
    await applyObjects(kc, [registration, ...admissionPolicyManifestList(policy)]);
    await awaitAdmission(series.webhook, 'the webhook registration');
    await awaitAdmission(series.policy, 'the admission policy');
    await awaitAdmission(series.neither, 'the neither arm (no admission of ours)');
    say(
      `webhook: rtb webhook, pid ${webhook.pid}, for ${namespaceOf('webhook')}; policy for ${namespaceOf('policy')}`,
    );

    const stored = async (arm: AdmissionArm): Promise<unknown> => {
      const s = series[arm];
      const { pod } = await s.client.create(
        s.namespace ?? 'default',
        podNamed(template, 'rtb-bench-same'),
        true,
      );
      return { labels: pod.metadata?.labels, annotations: pod.metadata?.annotations, spec: pod.spec };
    };
    const samePod = isDeepStrictEqual(await stored('webhook'), await stored('policy'));
    say(
      `the policy stores ${samePod ? 'the same Pod as' : 'a DIFFERENT Pod from'} the webhook (seed Pod, dry run)`,
    );

    const interleaved = interleavedCreates();
    const list = ADMISSION_ARMS.map((arm) => series[arm]);
    say(`measurement: ${warmup} warm-up + ${pods} creates per arm, interleaved, the order rotating`);
    await interleaved(warmup, list);
    const loadBefore = loadavg()[0] ?? Number.NaN;
    const [neither, withWebhook, withPolicy] = await interleaved(pods, list);
    const figures: AdmissionPathFigures = {
      pods,
      kubernetesVersion: plane.binaries.kubernetesVersion,
      arms: { neither: neither!, webhook: withWebhook!, policy: withPolicy! },
      samePod,
      load: { before: loadBefore, after: loadavg()[0] ?? Number.NaN },
    };
    say('-- Pod creation latency by admission path: result --');
    for (const line of admissionPathSummary(figures)) say(line);
    return figures;
  } finally {
    client?.close();
    await webhook?.proc.stop();
    await plane?.stop();
    await scratch.remove();
  }
}

/** The result as a table, the neither arm as the baseline. */
export function admissionPathSummary(f: AdmissionPathFigures): string[] {
  const base = f.arms.neither;
  const cell = (v: number): string => ms(v).padStart(10);
  const rows = ADMISSION_ARMS.map((arm) => {
    const s = f.arms[arm];
    const added = arm === 'neither' ? 'baseline' : `+${ms(s.p50 - base.p50)}`;
    return `  ${arm.padEnd(8)} ${cell(s.p50)} ${cell(s.p95)} ${cell(s.p99)} ${cell(s.mean)}   ${added}`;
  });
  return [
    `Pod creation by admission path, ${f.pods} sequential creates per arm on one kube-apiserver ` +
      `${f.kubernetesVersion} (interleaved; load average ${f.load.before.toFixed(2)} before, ` +
      `${f.load.after.toFixed(2)} after):`,
    `  arm             p50        p95        p99       mean   p50 over neither`,
    ...rows,
    `  the policy stores ${f.samePod ? 'the same Pod as' : 'a DIFFERENT Pod from'} the webhook`,
  ];
}

if (isMain(import.meta.url)) {
  runAdmissionPaths().catch((error: unknown) => {
    process.stderr.write(
      `admission-paths: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
