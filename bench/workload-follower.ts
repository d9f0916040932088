// The workload follower's cost per runtime (DESIGN §11): memory held per followed Pod, and CPU.
//
//   node --expose-gc --import tsx bench/workload-follower.ts
//   npx tsx bench/workload-follower.ts          (re-runs itself with --expose-gc)
//
// In one process: BENCH_FOLLOWER_PODS Pods (default 10,000) in 50 namespaces under two revisions,
// every tenth waiting in ImagePullBackOff on an image we rewrote, are built as V1Pod objects the
// way the API server sends them (our revision label and annotation, the original-images
// annotation, our pull Secret, the trust-bundle volume, a managed-fields entry). Each goes
// through what the follower does on a Pod's arrival (src/runtime-agent/workload-health/
// workload-follower.ts): the Pod reflector's transform (`followedPodOf`, with one `StringPool`),
// the reflector's cache (a `Store<FollowedPod>`, src/kube/store.ts, the type the `Reflector`
// keeps), then `observationOf` and `RevisionTally.upsert`. The follower itself needs an API
// server (its reflectors list and watch), so it is not started: the bench reproduces its Pod path
// with the exported functions and types. Its prom-client counters are left out.
//
// Memory: heap used after full collections with everything held, minus the same process's heap
// with the cache and the tally empty (the Secret cache, 50 namespaces, already filled), the
// V1Pods themselves dropped. CPU: process.cpuUsage (user + system), median of
// BENCH_FOLLOWER_RUNS runs (default 5), next to the baseline of building the V1Pods alone.
// The figures are printed, never asserted.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../src/api/webhook-status.js';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
  WORKLOAD_FIELD_MANAGER,
  WORKLOADS_KEY,
  writeWorkloads,
} from '../src/api/workload-health.js';
import { Store } from '../src/kube/store.js';
import {
  followedPodOf,
  observationOf,
  secretPresenceOf,
  StringPool,
  type FollowedPod,
  type SecretPresence,
} from '../src/runtime-agent/workload-health/followed-pod.js';
import type { PodHealthSettings } from '../src/runtime-agent/workload-health/pod-health.js';
import { RevisionRules } from '../src/runtime-agent/workload-health/revision-rules.js';
import { RevisionTally } from '../src/runtime-agent/workload-health/revision-tally.js';
import { workloadSettingsOf } from '../src/runtime-agent/workload-health/workload-follower.js';
import { envNumber, isMain, say as print } from './support/env.js';
import { median } from './support/stats.js';

const NAMESPACES = 50;
const REVISIONS = ['set-3f9a1c07', 'set-8b42d5e1'] as const;
const REGISTRY = 'europe-docker.pkg.dev/kyma-project/prod/external';
/** Both revisions' rules, as the follower knows them: Docker Hub to {@link REGISTRY}. */
const RULES_KNOWN = new RevisionRules();
for (const revision of REVISIONS) RULES_KNOWN.note(revision, { 'docker.io': REGISTRY });
const RULES = RULES_KNOWN.lookup;

/** What one CPU run measures. */
interface CpuFigures {
  /** CPU medians, milliseconds. */
  readonly buildCpuMs: number;
  readonly feedCpuMs: number;
  /** Per call, microseconds. */
  readonly reportCpuUs: number;
  readonly reportTextCpuUs: number;
  readonly reportBytes: number;
  readonly revisionsReported: number;
  readonly failing: number;
}

/** The run's figures. */
export interface FollowerFigures extends CpuFigures {
  readonly pods: number;
  readonly runs: number;
  /** Heap used with the cache and tally empty (bytes). */
  readonly baseHeap: number;
  /** Heap held by the 10,000 V1Pods alone (what a cache of whole Pods would hold), bytes. */
  readonly v1PodBytes: number;
  /** Heap held with every Pod followed, over the baseline (bytes). */
  readonly retainedBytes: number;
  /** Of which the Pod cache (Store<FollowedPod> and the string pool). */
  readonly cacheBytes: number;
  /** Of which the tally. */
  readonly tallyBytes: number;
}

/** Pod `i` of `n` as the API server sends it after our webhook changed it; every tenth failing. */
function buildPod(i: number, n: number, settings: PodHealthSettings): V1Pod {
  const namespace = `team-${String(i % NAMESPACES).padStart(2, '0')}`;
  const revision = i < n / 2 ? REVISIONS[0] : REVISIONS[1];
  const app = `app-${i % 200}`;
  const hash = (0x5f3c9a00 + (i % 200)).toString(16);
  const name = `${app}-${hash}-${i.toString(36).padStart(5, 'x')}`;
  const failing = i % 10 === 0;
  const original = `docker.io/library/nginx:1.27.${i % 5}`;
  const image = `${REGISTRY}/library/nginx:1.27.${i % 5}`;
  const created = new Date(Date.UTC(2026, 10, 27, 20, 0, 0) + i * 1_000).toISOString();
  const trust = settings.trustBundle ?? { volumeName: 'trust-bundle', volumeMountPath: '/etc/ssl/certs' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      generateName: `${app}-${hash}-`,
      namespace,
      uid: randomUUID(),
      resourceVersion: String(4_000_000 + i),
      creationTimestamp: created as unknown as Date, // the API server's text; a reflector gets it raw
      labels: { app, 'pod-template-hash': hash, [REVISION_LABEL]: revision },
      annotations: {
        [REVISION_ANNOTATION]: revision,
        [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ main: original }),
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${app}-${hash}`,
          uid: randomUUID(),
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time: created as unknown as Date,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': { 'f:generateName': {}, 'f:labels': { '.': {}, 'f:app': {} } },
            'f:spec': { 'f:containers': { 'k:{"name":"main"}': { '.': {}, 'f:image': {}, 'f:name': {} } } },
          },
        },
      ],
    },
    spec: {
      containers: [
        {
          name: 'main',
          image,
          imagePullPolicy: 'IfNotPresent',
          ports: [{ containerPort: 8080, protocol: 'TCP' }],
          env: [{ name: 'SSL_CERT_DIR', value: trust.volumeMountPath }],
          resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } },
          volumeMounts: [
            {
              name: 'kube-api-access-abcde',
              mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
              readOnly: true,
            },
            { name: trust.volumeName, mountPath: trust.volumeMountPath, readOnly: true },
          ],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
        },
      ],
      imagePullSecrets: [{ name: settings.pullSecretName }],
      volumes: [
        {
          name: 'kube-api-access-abcde',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            ],
          },
        },
        {
          name: trust.volumeName,
          projected: {
            sources: [{ clusterTrustBundle: { signerName: 'example.com/ca', path: 'bundle.pem' } }],
          },
        },
      ],
      nodeName: `node-${i % 12}`,
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      serviceAccountName: 'default',
      terminationGracePeriodSeconds: 30,
    },
    status: {
      phase: failing ? 'Pending' : 'Running',
      hostIP: `10.250.0.${i % 12}`,
      podIP: `100.64.${(i >> 8) & 255}.${i & 255}`,
      startTime: created as unknown as Date,
      qosClass: 'Burstable',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: created as unknown as Date },
        { type: 'Ready', status: failing ? 'False' : 'True', lastTransitionTime: created as unknown as Date },
      ],
      containerStatuses: [
        failing
          ? {
              name: 'main',
              image,
              imageID: '',
              ready: false,
              restartCount: 0,
              started: false,
              state: {
                waiting: {
                  reason: 'ImagePullBackOff',
                  message: `Back-off pulling image "${image}": ErrImagePull: failed to pull and unpack image "${image}": failed to resolve reference: ${image}: not found`,
                },
              },
            }
          : {
              name: 'main',
              image,
              imageID: `${REGISTRY}/library/nginx@sha256:${'0123456789abcdef'.repeat(4)}`,
              containerID: `containerd://${'fedcba9876543210'.repeat(4)}`,
              ready: true,
              restartCount: 0,
              started: true,
              state: { running: { startedAt: created as unknown as Date } },
            },
      ],
    },
  };
}

function buildPods(n: number, settings: PodHealthSettings): V1Pod[] {
  const pods: V1Pod[] = [];
  for (let i = 0; i < n; i++) pods.push(buildPod(i, n, settings));
  return pods;
}

/** What the follower holds: the Pod reflector's cache and the tally, the Secret cache beside. */
interface Held {
  readonly pool: StringPool;
  readonly pods: Store<FollowedPod>;
  readonly secrets: Store<SecretPresence>;
  tally: RevisionTally;
}

function emptyHeld(settings: PodHealthSettings): Held {
  const secrets = new Store<SecretPresence>();
  for (let n = 0; n < NAMESPACES; n++)
    secrets.upsert(
      secretPresenceOf({
        metadata: {
          name: settings.pullSecretName,
          namespace: `team-${String(n).padStart(2, '0')}`,
          resourceVersion: String(3_000_000 + n),
        },
      }),
    );
  return { pool: new StringPool(), pods: new Store<FollowedPod>(), secrets, tally: new RevisionTally() };
}

/** The follower's Pod path (its reflector's transform and store, then its `observe`). */
function arrive(held: Held, raw: V1Pod, settings: PodHealthSettings): void {
  const pod = followedPodOf(raw, settings, held.pool, RULES);
  held.pods.upsert(pod);
  observe(held, pod, settings);
}

function observe(held: Held, pod: FollowedPod, settings: PodHealthSettings): void {
  const namespace = pod.metadata?.namespace;
  const exists = namespace !== undefined && held.secrets.has(`${namespace}/${settings.pullSecretName}`);
  const seen = observationOf(pod, exists);
  if (seen === undefined) {
    if (pod.metadata?.uid !== undefined) held.tally.delete(pod.metadata.uid);
    return;
  }
  held.tally.upsert(seen);
}

function cpuMs(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1_000;
}

function heapAfterGc(): number {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 4; i++) gc();
  return process.memoryUsage().heapUsed;
}

/** Feeds every Pod of `box` through the follower's path (its own frame: nothing stays on the stack). */
function feedAll(held: Held, box: { raws: V1Pod[] }, settings: PodHealthSettings): void {
  for (const raw of box.raws) arrive(held, raw, settings);
}

function fillBox(box: { raws: V1Pod[] }, n: number, settings: PodHealthSettings): void {
  box.raws = buildPods(n, settings);
}

function warmUp(n: number, settings: PodHealthSettings): void {
  const held = emptyHeld(settings);
  feedAll(held, { raws: buildPods(Math.min(n, 2_000), settings) }, settings);
  writeWorkloads(held.tally.report());
}

/** One CPU run on fresh objects (its own frame, so none of them outlives it). */
function cpuRun(n: number, settings: PodHealthSettings, calls: number): CpuFigures {
  const box = { raws: [] as V1Pod[] };
  const buildCpuMs = cpuMs(() => {
    fillBox(box, n, settings);
  });
  const held = emptyHeld(settings);
  const feedCpuMs = cpuMs(() => {
    feedAll(held, box, settings);
  });
  box.raws = [];
  let revisions = 0;
  const reportCpuMs = cpuMs(() => {
    for (let c = 0; c < calls; c++) revisions += Object.keys(held.tally.report()).length;
  });
  let text = '';
  const reportTextCpuMs = cpuMs(() => {
    for (let c = 0; c < calls; c++) text = writeWorkloads(held.tally.report());
  });
  const last = held.tally.report();
  return {
    buildCpuMs,
    feedCpuMs,
    reportCpuUs: (reportCpuMs * 1_000) / calls,
    reportTextCpuUs: (reportTextCpuMs * 1_000) / calls,
    reportBytes: Buffer.byteLength(text),
    revisionsReported: revisions / calls,
    failing: Object.values(last).reduce((sum, h) => sum + h.failing, 0),
  };
}

interface MemoryFigures {
  readonly baseHeap: number;
  readonly v1PodBytes: number;
  readonly retainedBytes: number;
  readonly cacheBytes: number;
  readonly tallyBytes: number;
}

/** Heap used: empty, V1Pods held, every Pod followed (V1Pods dropped), the tally dropped. */
function memoryRun(n: number, settings: PodHealthSettings): MemoryFigures {
  const held = emptyHeld(settings);
  const box = { raws: [] as V1Pod[] };
  const baseHeap = heapAfterGc();
  fillBox(box, n, settings);
  const withV1Pods = heapAfterGc();
  feedAll(held, box, settings);
  box.raws = [];
  const following = heapAfterGc();
  if (held.pods.size !== n || held.tally.size !== n) throw new Error('not every Pod was followed');
  held.tally = new RevisionTally();
  const cacheOnly = heapAfterGc();
  // Read after the collection: keeps the cache reachable while it is measured.
  if (held.pods.size !== n) throw new Error('the Pod cache lost Pods');
  return {
    baseHeap,
    v1PodBytes: withV1Pods - baseHeap,
    retainedBytes: following - baseHeap,
    cacheBytes: cacheOnly - baseHeap,
    tallyBytes: following - cacheOnly,
  };
}

/** Runs the bench; `say` prints progress. */
export function runWorkloadFollower(say: (line: string) => void): FollowerFigures {
  const n = Math.floor(envNumber('BENCH_FOLLOWER_PODS', 10_000));
  const runs = Math.floor(envNumber('BENCH_FOLLOWER_RUNS', 5));
  const settings = workloadSettingsOf(undefined);
  say(`== workload follower: ${n} Pods, ${NAMESPACES} namespaces, ${REVISIONS.length} revisions ==`);
  // So the code is compiled before the baseline is taken.
  warmUp(n, settings);

  const cpu: CpuFigures[] = [];
  for (let r = 0; r < runs; r++) {
    const c = cpuRun(n, settings, 10_000);
    cpu.push(c);
    say(
      `run ${r + 1}: build ${c.buildCpuMs.toFixed(1)} ms, feed ${c.feedCpuMs.toFixed(1)} ms, report ${c.reportCpuUs.toFixed(2)} µs`,
    );
  }
  const mem = memoryRun(n, settings);
  say(`memory: ${mb(mem.retainedBytes)} retained over a baseline of ${mb(mem.baseHeap)}`);
  const last = cpu[cpu.length - 1];
  return {
    pods: n,
    runs,
    failing: last?.failing ?? 0,
    ...mem,
    buildCpuMs: median(cpu.map((c) => c.buildCpuMs)),
    feedCpuMs: median(cpu.map((c) => c.feedCpuMs)),
    reportCpuUs: median(cpu.map((c) => c.reportCpuUs)),
    reportTextCpuUs: median(cpu.map((c) => c.reportTextCpuUs)),
    reportBytes: last?.reportBytes ?? 0,
    revisionsReported: last?.revisionsReported ?? 0,
  };
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(2)} MB`;
}

/** The markdown table of a run. */
export function workloadFollowerTable(f: FollowerFigures): string[] {
  const per = (bytes: number): string => `${Math.round(bytes / f.pods)} B/Pod`;
  return [
    `| workload follower, ${f.pods} Pods (${f.failing} failing), node ${process.version} | figure | per Pod |`,
    '| --- | --- | --- |',
    `| baseline: heap used, cache and tally empty | ${mb(f.baseHeap)} | |`,
    `| retained: Pod cache + tally (over the baseline) | ${mb(f.retainedBytes)} | ${per(f.retainedBytes)} |`,
    `| of which Pod cache (Store<FollowedPod>, string pool) | ${mb(f.cacheBytes)} | ${per(f.cacheBytes)} |`,
    `| of which RevisionTally | ${mb(f.tallyBytes)} | ${per(f.tallyBytes)} |`,
    `| for scale: the same Pods as whole V1Pod objects | ${mb(f.v1PodBytes)} | ${per(f.v1PodBytes)} |`,
    `| baseline: CPU to build the V1Pods alone (median of ${f.runs}) | ${f.buildCpuMs.toFixed(1)} ms | ${((f.buildCpuMs * 1_000) / f.pods).toFixed(2)} µs |`,
    `| CPU to feed ${f.pods} upserts (transform, store, tally) | ${f.feedCpuMs.toFixed(1)} ms | ${((f.feedCpuMs * 1_000) / f.pods).toFixed(2)} µs |`,
    `| CPU to build the report (${f.revisionsReported} revisions) | ${f.reportCpuUs.toFixed(1)} µs | |`,
    `| CPU to build and serialize it (${f.reportBytes} bytes) | ${f.reportTextCpuUs.toFixed(1)} µs | |`,
  ];
}

/** The follower's API requests, from its code (constants named where exported). */
export function workloadFollowerRequests(settings: PodHealthSettings): string[] {
  return [
    'API requests of the follower (read from src/runtime-agent/workload-health/; only on the leading replica):',
    `- Pods: one list+watch of /api/v1/pods, all namespaces, labelSelector=${REVISION_LABEL} (REVISION_LABEL): the API server filters, one Pod reflector.`,
    `- Secrets: one list+watch of /api/v1/secrets, all namespaces, fieldSelector=metadata.name=${settings.pullSecretName} (the config's imagePullSecret.name); data dropped on arrival.`,
    `- On taking the lead: one GET of ConfigMap ${WEBHOOK_STATUS_CONFIG_MAP} (WEBHOOK_STATUS_CONFIG_MAP) for the previous report, retried from 1 s doubling to 30 s.`,
    `- Report: server-side apply (PATCH) of that ConfigMap's key "${WORKLOADS_KEY}" under field manager ${WORKLOAD_FIELD_MANAGER}, only when the report differs from the last one written, at most one per writeGapMs (default 5 s: a literal in report-writer.ts, not exported); a failed write is retried from 1 s doubling to 30 s.`,
    '- A change of the pull Secret name or trust-bundle settings restarts both watches (a new list each); leadership and settings are polled every 1 s without requests.',
  ];
}

function reexecWithGc(): never {
  const script = process.argv[1];
  if (script === undefined) throw new Error('no script path');
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', ...process.execArgv, script, ...process.argv.slice(2)],
    {
      stdio: 'inherit',
    },
  );
  process.exit(r.status ?? 1);
}

if (isMain(import.meta.url)) {
  if (globalThis.gc === undefined) reexecWithGc();
  const figures = runWorkloadFollower(print);
  print('');
  for (const line of workloadFollowerTable(figures)) print(line);
  print('');
  for (const line of workloadFollowerRequests(workloadSettingsOf(undefined))) print(line);
}
