/**
 * The preflight on a canary runtime (DESIGN §11): while this replica leads, it follows the
 * candidate Secret the KCP writes (`kyma-system/rt-bootstrapper-preflight`), and for each new
 * candidate version checks, with the candidate's pull credentials, that every image running here
 * that the candidate's overrides would move resolves at its new location; the outcome goes under
 * key `preflight` of the status ConfigMap, where the KCP reads it.
 */
import type { V1Namespace, V1Pod, V1Secret } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { SET_VERSION_ANNOTATION } from '../../api/runtime-bootstrapper.js';
import { RUNTIME_NAMESPACE } from '../../api/runtime-names.js';
import { readWebhookConfig } from '../../api/webhook-config.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../api/webhook-status.js';
import {
  PREFLIGHT_CONFIG_KEY,
  PREFLIGHT_DOCKER_CONFIG_KEY,
  PREFLIGHT_FIELD_MANAGER,
  PREFLIGHT_KEY,
  PREFLIGHT_SECRET,
  readPreflight,
  writePreflight,
  type PreflightReport,
} from '../../api/workload-health.js';
import { applyConfigMapData } from '../../kube/apply.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { MAX_PAGE_ITEMS } from '../../kube/list-budget.js';
import { listAll } from '../../kube/pager.js';
import { Reflector } from '../../kube/reflector.js';
import { errorLine } from '../../telemetry/error-line.js';
import {
  checkImages,
  DEFAULT_PREFLIGHT_BUDGET_MS,
  DEFAULT_PREFLIGHT_CONCURRENCY,
  type CheckImagesResult,
} from './preflight-check.js';
import { createRegistryRewriter } from '../../image/registry-rewrite.js';
import { confirmFindings, stableTargets } from './stable-check.js';
import { cachedNamespaceOf } from '../../kube/cached-namespace.js';
import { planPodOf } from './plan-pod.js';
import { planPreflight, type PreflightPlan } from './preflight-plan.js';
import { doneReport, runningReport } from './preflight-report.js';
import { RegistryProbe } from './registry-probe.js';
import { abortableSleep } from '../../kube/abortable-sleep.js';

/** Options of {@link startPreflight}. */
export interface PreflightOptions {
  readonly access: ClusterAccess;
  /** Whether this replica leads (the trust restarter's Lease): only the leader checks and writes. */
  readonly isActive: () => boolean;
  readonly logger: Logger;
  /** Namespace of the candidate Secret and of the status ConfigMap (default kyma-system). */
  readonly namespace?: string | undefined;
  /** The status ConfigMap's name (default rt-bootstrapper-webhook-status). */
  readonly statusConfigMap?: string | undefined;
  /** PEM certificates trusted for registries beside Node's roots. */
  readonly ca?: string | undefined;
  /** A PEM file read at each check (the landscape's trust bundle), added to {@link ca}. */
  readonly caFile?: string | undefined;
  /** Where registries are served when not at `https://<registry>` (../preflight/registry-probe.ts). */
  readonly registryServers?: Readonly<Record<string, string>> | undefined;
  /** Distinct images checked at most (default 200). */
  readonly maxImages?: number | undefined;
  /** Probes in flight at once (default 8). */
  readonly concurrency?: number | undefined;
  /** Time for all probes of one candidate (default 60 s). */
  readonly budgetMs?: number | undefined;
  /** Bound of each registry request (default 10 s). */
  readonly requestTimeoutMs?: number | undefined;
  /** Namespaces the webhook never mutates: their Pods are not checked. */
  readonly excludedNamespaces?: readonly string[] | undefined;
  /** How often leadership is looked at (default 2 s). */
  readonly activeCheckMs?: number | undefined;
  /** Page size of the Pod and Namespace lists (default 500). */
  readonly pageSize?: number | undefined;
  /**
   * The stable set in force here (its overrides and pull credentials): a finding counts only for
   * an image that resolves where it sends it (./stable-check.ts). Undefined (or returning
   * undefined): every finding counts, as before.
   */
  readonly stable?: (() => StableSet | undefined) | undefined;
}

/** The set in force on the runtime, as the stable check needs it. */
export interface StableSet {
  readonly overrides: Readonly<Record<string, string>>;
  /** Its `overrideExclusions`: images it leaves where they are. */
  readonly overrideExclusions?: readonly string[] | undefined;
  /** Its pull Secret's `.dockerconfigjson`; undefined: probed without credentials. */
  readonly dockerConfigJson: string | undefined;
}

/** A running preflight. */
export interface Preflight {
  /** Stops following and aborts a check in flight (its report is not finished). */
  stop(): Promise<void>;
  /**
   * Whether the last finished preflight found this rewritten image (a target) missing at its
   * registry or refused to the candidate's credentials: for admission warnings. A report taken
   * over from an earlier leader knows only its samples.
   */
  knownMissing(image: string): boolean;
  /** The last report of a candidate version, as written (undefined before its check began). */
  report(version: string): PreflightReport | undefined;
}

/** The candidate a Secret describes. */
interface Candidate {
  readonly version: string;
  readonly configText: string | undefined;
  readonly dockerConfigJson: string | undefined;
}

// Reports kept in memory, newest last.
const KEPT_VERSIONS = 5;
const WRITE_RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000];
// After a check that failed (no list of Pods, say), the same candidate waits this long.
const FAILED_RETRY_MS = 15_000;

// A call, not a property read: the compiler takes `aborted` as unchanged across awaits.
const aborted = (signal: AbortSignal): boolean => signal.aborted;

function decode(secret: V1Secret, key: string): string | undefined {
  const value = secret.data?.[key];
  return value === undefined ? secret.stringData?.[key] : Buffer.from(value, 'base64').toString('utf8');
}

function candidateOf(secret: V1Secret | undefined): Candidate | undefined {
  const version = secret?.metadata?.annotations?.[SET_VERSION_ANNOTATION];
  if (secret === undefined || version === undefined || version === '') return undefined;
  return {
    version,
    configText: decode(secret, PREFLIGHT_CONFIG_KEY),
    dockerConfigJson: decode(secret, PREFLIGHT_DOCKER_CONFIG_KEY),
  };
}

/**
 * Starts the preflight: it looks at leadership every `activeCheckMs`, follows the candidate
 * Secret while it leads, and checks each candidate version once (a later replica that finds a
 * finished report of the same version in the status ConfigMap takes it over instead). Checks
 * run one at a time; a newer candidate, a lost lead or {@link Preflight.stop} aborts the one in
 * flight. A deleted Secret clears nothing: the KCP reads reports by version.
 */
export function startPreflight(o: PreflightOptions): Preflight {
  const namespace = o.namespace ?? RUNTIME_NAMESPACE;
  const statusName = o.statusConfigMap ?? WEBHOOK_STATUS_CONFIG_MAP;
  const logger = o.logger;
  const lifetime = new AbortController();
  const reports = new Map<string, PreflightReport>();
  let missingTargets: ReadonlySet<string> = new Set();
  let follower: Reflector<V1Secret> | undefined;
  let running: { version: string; abort: AbortController; done: Promise<void> } | undefined;
  let wanted = false;
  /** Per version, when a failed check may be tried again. */
  const retryAt = new Map<string, number>();

  const keep = (report: PreflightReport): void => {
    reports.delete(report.version);
    reports.set(report.version, report);
    for (const v of reports.keys()) {
      if (reports.size <= KEPT_VERSIONS) break;
      reports.delete(v);
    }
  };

  const current = (): Candidate | undefined =>
    candidateOf(follower?.store.list().find((s) => s.metadata?.name === PREFLIGHT_SECRET));

  /** Writes the report under its own field manager, retried while it matters. */
  const write = async (report: PreflightReport, signal: AbortSignal): Promise<boolean> => {
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) return false;
      try {
        await applyConfigMapData(
          o.access,
          { name: statusName, namespace },
          { [PREFLIGHT_KEY]: writePreflight(report) },
          { fieldManager: PREFLIGHT_FIELD_MANAGER },
        );
        return true;
      } catch (error) {
        const wait = WRITE_RETRY_MS[Math.min(attempt, WRITE_RETRY_MS.length - 1)] ?? 30_000;
        logger.warn(
          { err: error, version: report.version, retryInMs: wait },
          'cannot write the preflight report',
        );
        await abortableSleep(wait, signal);
      }
    }
  };

  /** The report a replica that led before finished for this version, if any. */
  const finishedEarlier = async (version: string): Promise<PreflightReport | undefined> => {
    try {
      const cm = await kubeRequest<{ data?: Record<string, string> } | undefined>(o.access, {
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}/configmaps/${statusName}`,
        timeoutMs: 10_000,
      });
      const earlier = readPreflight(cm?.data?.[PREFLIGHT_KEY]);
      return earlier?.version === version && earlier.phase === 'done' ? earlier : undefined;
    } catch {
      // Absent or unreadable: check again, which costs a minute at most.
      return undefined;
    }
  };

  const listPlan = async (candidate: Candidate, signal: AbortSignal): Promise<PreflightPlan> => {
    const pageSize = o.pageSize ?? MAX_PAGE_ITEMS;
    // Pages bounded in bytes, each Pod cut to what the plan reads as its page arrives, the
    // Namespaces metadata only: every Pod of the cluster passes through, a tenant's too.
    const [pods, namespaces] = await Promise.all([
      listAll(new KubeListWatch<V1Pod>(o.access, '/api/v1/pods'), { pageSize, transform: planPodOf }, signal),
      listAll(
        new KubeListWatch<V1Namespace>(o.access, '/api/v1/namespaces', { metadataOnly: true }),
        { pageSize, transform: cachedNamespaceOf },
        signal,
      ),
    ]);
    let config;
    try {
      // Read as the KCP reads a set (no landscape known): only overrides and features count here.
      config = readWebhookConfig(candidate.configText ?? '').config;
    } catch (error) {
      logger.warn(
        { version: candidate.version, err: errorLine(error) },
        'the preflight candidate config is unreadable: nothing to check',
      );
      return { images: [], skipped: 0, unparseable: 0 };
    }
    return planPreflight({
      pods: pods.items,
      namespaces: namespaces.items,
      config,
      maxImages: o.maxImages,
      excludedNamespaces: o.excludedNamespaces,
    });
  };

  const extraCa = async (): Promise<string | undefined> => {
    let fromFile = '';
    if (o.caFile !== undefined) {
      try {
        fromFile = await readFile(o.caFile, 'utf8');
      } catch (error) {
        logger.warn(
          { file: o.caFile, err: errorLine(error) },
          'cannot read the registry CA file; using the system CAs',
        );
      }
    }
    const joined = [o.ca ?? '', fromFile].filter((p) => p.trim() !== '').join('\n');
    return joined === '' ? undefined : joined;
  };

  /**
   * The findings of `result` kept only where the original resolves at the stable location, with
   * the stable credentials (bounded as the candidate's probes: one more budget at most).
   */
  const confirmed = async (result: CheckImagesResult, signal: AbortSignal): Promise<CheckImagesResult> => {
    const stable = o.stable?.();
    if (stable === undefined) return result;
    let rewrite;
    try {
      rewrite = createRegistryRewriter(stable.overrides, stable.overrideExclusions);
    } catch {
      return result;
    }
    const targets = stableTargets(result, rewrite);
    if (targets.length === 0) return result;
    const probe = await newProbe({
      version: 'stable',
      configText: undefined,
      dockerConfigJson: stable.dockerConfigJson,
    });
    try {
      const stableResult = await checkImages(targets, probe, {
        concurrency: o.concurrency,
        budgetMs: o.budgetMs ?? DEFAULT_PREFLIGHT_BUDGET_MS,
        signal,
      });
      return confirmFindings(result, stableResult.checked);
    } finally {
      probe.close();
    }
  };

  const newProbe = async (candidate: Candidate): Promise<RegistryProbe> => {
    const options = {
      ca: await extraCa(),
      servers: o.registryServers,
      requestTimeoutMs: o.requestTimeoutMs,
      maxSockets: o.concurrency ?? DEFAULT_PREFLIGHT_CONCURRENCY,
    };
    try {
      return new RegistryProbe({ ...options, dockerConfigJson: candidate.dockerConfigJson });
    } catch (error) {
      // Never the text: it holds the credentials. Anonymous probes still say which registries refuse.
      logger.warn(
        { version: candidate.version, err: errorLine(error) },
        'the candidate pull Secret is unreadable; probing without credentials',
      );
      return new RegistryProbe(options);
    }
  };

  const check = async (candidate: Candidate, signal: AbortSignal): Promise<void> => {
    const earlier = await finishedEarlier(candidate.version);
    if (earlier !== undefined) {
      keep(earlier);
      missingTargets = new Set(
        earlier.samples.filter((s) => s.result !== 'unreachable').map((s) => s.target),
      );
      return;
    }
    const startedAt = new Date();
    const running = runningReport(candidate.version, startedAt);
    keep(running);
    if (!(await write(running, signal))) return;
    const plan = await listPlan(candidate, signal);
    const probe = await newProbe(candidate);
    let result: CheckImagesResult;
    try {
      result = await checkImages(plan.images, probe, {
        concurrency: o.concurrency,
        budgetMs: o.budgetMs ?? DEFAULT_PREFLIGHT_BUDGET_MS,
        signal,
      });
    } finally {
      probe.close();
    }
    if (signal.aborted) return;
    result = await confirmed(result, signal);
    if (aborted(signal)) return;
    const report = doneReport(candidate.version, plan, result, startedAt, new Date());
    keep(report);
    missingTargets = new Set(
      result.checked
        .filter((c) => c.outcome.result === 'missing' || c.outcome.result === 'refused')
        .map((c) => c.target),
    );
    logger.info(
      {
        version: report.version,
        checked: report.checked,
        skipped: report.skipped,
        missing: report.missing,
        refused: report.refused,
        unreachable: report.unreachable,
        ms: Date.now() - startedAt.getTime(),
      },
      'preflight done',
    );
    await write(report, signal);
  };

  /** Starts a check of the candidate in force unless it is done or under way; aborts an outdated one. */
  const reconcile = (): void => {
    if (lifetime.signal.aborted || follower === undefined) return;
    const candidate = current();
    if (candidate === undefined) return;
    if (running !== undefined) {
      if (running.version !== candidate.version) running.abort.abort(new Error('a newer candidate'));
      return;
    }
    if (reports.get(candidate.version)?.phase === 'done') return;
    if ((retryAt.get(candidate.version) ?? 0) > Date.now()) return;
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, lifetime.signal]);
    const entry = {
      version: candidate.version,
      abort,
      done: check(candidate, signal).then(
        () => undefined,
        (error: unknown) => {
          if (signal.aborted) return;
          retryAt.set(candidate.version, Date.now() + FAILED_RETRY_MS);
          logger.warn(
            { version: candidate.version, err: errorLine(error), retryInMs: FAILED_RETRY_MS },
            'the preflight failed',
          );
        },
      ),
    };
    running = entry;
    void entry.done.finally(() => {
      if (running === entry) running = undefined;
      // A candidate that came while this one ran (a failed one waits for its retry time).
      reconcile();
    });
  };

  const startFollowing = (): void => {
    const secrets = new Reflector<V1Secret>({
      name: `secret ${namespace}/${PREFLIGHT_SECRET}`,
      listerWatcher: new KubeListWatch<V1Secret>(o.access, `/api/v1/namespaces/${namespace}/secrets`),
      // Only that Secret: the webhook may read no other here (RBAC by name, through the selector).
      fieldSelector: `metadata.name=${PREFLIGHT_SECRET}`,
      logger,
      handlers: { onAdd: reconcile, onUpdate: reconcile },
    });
    follower = secrets;
    secrets.start();
  };

  const stopFollowing = async (): Promise<void> => {
    const secrets = follower;
    follower = undefined;
    const run = running;
    run?.abort.abort(new Error('no longer leading'));
    await secrets?.stop();
    await run?.done;
  };

  let transition: Promise<void> = Promise.resolve();
  const tick = (): void => {
    const active = o.isActive();
    if (active === wanted) {
      // A check that failed (the API server was away) is tried again while leading.
      if (active && running === undefined) reconcile();
      return;
    }
    wanted = active;
    transition = transition
      .then(() => {
        if (lifetime.signal.aborted) return;
        if (active && follower === undefined) startFollowing();
        else if (!active) return stopFollowing();
        return undefined;
      })
      .catch((error: unknown) => {
        logger.warn({ err: errorLine(error) }, 'cannot switch the preflight on or off');
      });
  };
  const timer = setInterval(tick, o.activeCheckMs ?? 2_000);
  timer.unref();
  tick();

  return {
    async stop() {
      clearInterval(timer);
      lifetime.abort(new Error('stopped'));
      await transition;
      await stopFollowing();
    },
    knownMissing: (image) => missingTargets.has(image),
    report: (version) => reports.get(version),
  };
}
