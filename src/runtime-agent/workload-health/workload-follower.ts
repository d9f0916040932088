/**
 * The workload follower (DESIGN §11): on the one replica that leads (the trust restarter's Lease,
 * told by `isActive`), it follows the Pods the webhook changed (a label selector, so the API
 * server filters and standbys hold nothing), keeps a few facts of each (./followed-pod.ts),
 * counts them per revision (./revision-tally.ts) and writes the report into the status ConfigMap
 * (./report-writer.ts). Whether our pull Secret exists in a namespace comes from a watch of the
 * Secrets of its name (a field selector; their data is dropped as they arrive).
 *
 * A replica that becomes active takes over the report the previous leader wrote (its deleted
 * failed Pods, its samples), since those Pods are gone and no list can show them again.
 */
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../api/webhook-status.js';
import type { WebhookConfig } from '../../api/webhook-config.js';
import {
  REVISION_LABEL,
  REVISION_RULES_KEY,
  WORKLOADS_KEY,
  readWorkloads,
  type WorkloadHealthReport,
} from '../../api/workload-health.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import {
  followedPodOf,
  observationOf,
  secretPresenceOf,
  StringPool,
  type FollowedPod,
  type SecretPresence,
} from './followed-pod.js';
import type { PodHealthSettings } from './pod-health.js';
import { ReportWriter } from './report-writer.js';
import { RevisionRules } from './revision-rules.js';
import { RevisionTally } from './revision-tally.js';
import { createWorkloadMetrics, type WorkloadMetrics } from './workload-metrics.js';
import { abortableSleep } from '../../kube/abortable-sleep.js';

/** Options of {@link startWorkloadFollower}. */
export interface WorkloadFollowerOptions {
  /** The webhook's access (its ServiceAccount): list+watch Pods and Secrets, apply the ConfigMap. */
  readonly access: ClusterAccess;
  /** Whether this replica leads (the trust restarter's `isActive`); polled every `pollMs`. */
  readonly isActive: () => boolean;
  /** What the classifier needs from the configuration in force ({@link workloadSettingsOf}); polled too. */
  readonly settings: () => PodHealthSettings;
  /**
   * The revision in force and its overrides (undefined while none): a Pod's stamp is checked
   * against the rules of the revision it names (./revision-rules.ts), and only the rules of
   * revisions this webhook served (or one before it, through the status ConfigMap) are known.
   */
  readonly inForce: () => RevisionInForce | undefined;
  /** Namespace of the status ConfigMap (the webhook's). */
  readonly namespace: string;
  /** Name of the status ConfigMap (default `rt-bootstrapper-webhook-status`). */
  readonly configMapName?: string;
  readonly registry: Registry;
  readonly logger: Logger;
  /** For the reflectors' own logs (default `logger`). */
  readonly reflectorLogger?: Logger;
  /** How often leadership and settings are looked at (default 1 s). */
  readonly pollMs?: number;
  /** Least time between two writes of the report (default 5 s). */
  readonly writeGapMs?: number;
  /** First retry delay of a failed read or write, doubling to 30 s (default 1 s). */
  readonly retryBaseMs?: number;
  /** Clock of the report's times (tests). */
  readonly now?: () => Date;
}

/** The revision in force and the overrides of its configuration. */
export interface RevisionInForce {
  readonly revision: string;
  readonly overrides: Readonly<Record<string, string>>;
}

/** A running follower. */
export interface WorkloadFollower {
  /** Stops following and writing; resolves once every request has ended. */
  stop(): Promise<void>;
  /** The report now (while leading), or the last one this replica computed; `{}` before any. */
  report(): WorkloadHealthReport;
}

/**
 * The classifier's settings from the configuration in force (upstream's pull Secret name without
 * one). Without a trust bundle in force no volume of ours is mounted, so no failure is a mount's.
 */
export function workloadSettingsOf(config: WebhookConfig | undefined): PodHealthSettings {
  const ctb = config?.clusterTrustBundle;
  const pullSecretName = config?.imagePullSecret.name ?? 'registry-credentials';
  if (ctb === undefined) return { pullSecretName };
  const { name, certWritePath, volumeName, volumeMountPath } = ctb;
  return { pullSecretName, trustBundle: { name, certWritePath, volumeName, volumeMountPath } };
}

/** Starts the follower; it does nothing but poll until `isActive()` says this replica leads. */
export function startWorkloadFollower(o: WorkloadFollowerOptions): WorkloadFollower {
  const follower = new Follower(o);
  follower.start();
  return follower;
}

/** While this replica leads: the tally, its writer, and the watches for the settings in force. */
interface Leading {
  readonly tally: RevisionTally;
  readonly writer: ReportWriter;
  watches: Watches | undefined;
  /** The previous leader's report is taken over (once, after the first sync). */
  carried: boolean;
}

/** The Pod and Secret reflectors for one set of settings. */
interface Watches {
  readonly key: string;
  readonly abort: AbortController;
  readonly pods: Reflector<FollowedPod>;
  readonly secrets: Reflector<SecretPresence>;
  readonly done: Promise<void>;
}

class Follower implements WorkloadFollower {
  private readonly log: Logger;
  private readonly metrics: WorkloadMetrics;
  private readonly target: { namespace: string; name: string };
  private leading: Leading | undefined;
  private last: WorkloadHealthReport = {};
  private timer: NodeJS.Timeout | undefined;
  /** Ticks run one after another, never overlapping. */
  private ticking: Promise<void> = Promise.resolve();
  private busy = false;
  private stopped = false;
  private readonly rules = new RevisionRules();
  /** The revision and overrides object last noted (configs are replaced, never edited). */
  private noted: RevisionInForce | undefined;

  constructor(private readonly o: WorkloadFollowerOptions) {
    this.log = o.logger.child({ part: 'workload-follower' });
    this.metrics = createWorkloadMetrics(o.registry);
    this.target = { namespace: o.namespace, name: o.configMapName ?? WEBHOOK_STATUS_CONFIG_MAP };
  }

  start(): void {
    this.tick();
    this.timer = setInterval(() => {
      this.tick();
    }, this.o.pollMs ?? 1_000);
    this.timer.unref();
  }

  report(): WorkloadHealthReport {
    return this.leading?.tally.report() ?? this.last;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    await this.stepDown();
  }

  private tick(): void {
    if (this.busy || this.stopped) return;
    this.busy = true;
    this.ticking = this.step()
      .catch((err: unknown) => {
        this.log.error({ err }, 'workload follower step failed');
      })
      .finally(() => {
        this.busy = false;
      });
  }

  /** Notes the revision in force; says whether the rules known changed. */
  private noteInForce(): boolean {
    const now = this.o.inForce();
    if (now === undefined) return false;
    if (this.noted?.revision === now.revision && this.noted.overrides === now.overrides) return false;
    this.noted = now;
    this.rules.note(now.revision, now.overrides);
    return true;
  }

  /** The rules of a Pod's revision, the one in force looked at first (no poll's delay). */
  private readonly lookup = (revision: string): ReturnType<RevisionRules['lookup']> => {
    this.noteInForce();
    return this.rules.lookup(revision);
  };

  private async step(): Promise<void> {
    if (this.noteInForce()) this.leading?.writer.changed();
    if (!this.o.isActive()) {
      await this.stepDown();
      return;
    }
    const settings = this.o.settings();
    const key = JSON.stringify(settings);
    if (this.leading === undefined) {
      this.log.info('leading: following the Pods the webhook changed');
      const tally = new RevisionTally(this.o.now ? { now: this.o.now } : {});
      this.leading = {
        tally,
        writer: new ReportWriter({
          access: this.o.access,
          target: this.target,
          report: () => tally.report(),
          rules: () => this.rules.toText(),
          logger: this.log,
          minGapMs: this.o.writeGapMs,
          retryBaseMs: this.o.retryBaseMs,
          onWrite: (ok) => {
            this.metrics.writes.inc({ result: ok ? 'ok' : 'error' });
          },
        }),
        watches: undefined,
        carried: false,
      };
    }
    const leading = this.leading;
    if (leading.watches?.key === key) return;
    if (leading.watches !== undefined) {
      this.log.info('the pull Secret or trust-bundle settings changed: following anew');
      await stopWatches(leading.watches);
    }
    leading.watches = this.watch(leading, settings, key);
  }

  private async stepDown(): Promise<void> {
    const leading = this.leading;
    if (leading === undefined) return;
    this.leading = undefined;
    this.last = leading.tally.report();
    this.log.info('no longer leading: the workload follower stops');
    if (leading.watches !== undefined) await stopWatches(leading.watches);
    await leading.writer.stop();
    this.metrics.followedPods.set(0);
  }

  private watch(leading: Leading, settings: PodHealthSettings, key: string): Watches {
    const { tally, writer } = leading;
    const abort = new AbortController();
    const pool = new StringPool();
    const reflectorLogger = this.o.reflectorLogger ?? this.o.logger;
    let ready = false;
    const secrets = new Reflector<SecretPresence>({
      name: `secrets named ${settings.pullSecretName}`,
      // Presence is all it reads: metadata only, so no Secret's data reaches the process.
      listerWatcher: new KubeListWatch<SecretPresence>(this.o.access, '/api/v1/secrets', {
        metadataOnly: true,
      }),
      fieldSelector: `metadata.name=${settings.pullSecretName}`,
      transform: secretPresenceOf,
      logger: reflectorLogger,
    });
    const secretExists = (namespace: string | undefined): boolean =>
      namespace !== undefined && secrets.store.has(`${namespace}/${settings.pullSecretName}`);
    const changed = (): void => {
      this.metrics.followedPods.set(tally.size);
      if (ready) writer.changed();
    };
    const observe = (pod: FollowedPod): void => {
      const seen = observationOf(pod, secretExists(pod.metadata?.namespace));
      if (seen === undefined) {
        // The revision label's value went away: no longer a Pod of a revision.
        if (pod.metadata?.uid !== undefined) tally.delete(pod.metadata.uid);
        return;
      }
      for (const kind of tally.upsert(seen)) this.metrics.failures.inc({ kind });
    };
    const pods = new Reflector<FollowedPod>({
      name: 'pods changed by the webhook',
      listerWatcher: new KubeListWatch<V1Pod>(this.o.access, '/api/v1/pods'),
      labelSelector: REVISION_LABEL,
      transform: (pod) => followedPodOf(pod, settings, pool, this.lookup),
      logger: reflectorLogger,
      handlers: {
        onAdd: (pod) => {
          observe(pod);
          changed();
        },
        onUpdate: (old, pod) => {
          // The same name with another uid (a StatefulSet's Pod recreated while we relisted).
          const oldUid = old.metadata?.uid;
          if (oldUid !== undefined && oldUid !== pod.metadata?.uid) tally.delete(oldUid);
          observe(pod);
          changed();
        },
        onDelete: (pod) => {
          const uid = pod.metadata?.uid;
          if (uid !== undefined) tally.delete(uid);
          changed();
        },
      },
    });
    // Our Secret appearing or going away in a namespace changes what its Pods' pull errors mean.
    const secretChanged = (secret: SecretPresence): void => {
      const namespace = secret.metadata?.namespace;
      let any = false;
      for (const pod of pods.store.list())
        if (pod.metadata?.namespace === namespace && pod.facts?.pullWaits !== undefined) {
          observe(pod);
          any = true;
        }
      if (any) changed();
    };
    secrets.addEventHandler({ onAdd: secretChanged, onDelete: secretChanged });
    const run = async (): Promise<void> => {
      // The rules kept before come first: the Pods listed next are checked against them.
      const previous = leading.carried ? {} : await this.previousReport(abort.signal);
      // Pods only once the Secrets are known: a pull error with the Secret not yet seen would be
      // counted as a missing Secret, for good.
      secrets.start();
      await secrets.waitForSync(abort.signal);
      pods.start();
      await pods.waitForSync(abort.signal);
      // Pods that went away while no watch was running (settings changed) are gone now.
      const present = new Set(pods.store.list().map((p) => p.metadata?.uid));
      for (const uid of tally.uids()) if (!present.has(uid)) tally.delete(uid);
      if (!leading.carried) {
        tally.carryOver(previous);
        leading.carried = true;
      }
      ready = true;
      changed();
      this.log.info({ pods: tally.size }, 'following the Pods the webhook changed');
    };
    const done = run().catch((err: unknown) => {
      if (!abort.signal.aborted) this.log.error({ err }, 'the workload follower cannot start');
    });
    return { key, abort, pods, secrets, done };
  }

  /**
   * The report the previous leader wrote, and the rules it kept (taken into the rules known);
   * retried until read or stopped (`{}` when stopped).
   */
  private async previousReport(signal: AbortSignal): Promise<WorkloadHealthReport> {
    let delay = this.o.retryBaseMs ?? 1_000;
    const path = `/api/v1/namespaces/${this.target.namespace}/configmaps/${this.target.name}`;
    while (!signal.aborted) {
      try {
        const cm = await kubeRequest<V1ConfigMap>(this.o.access, { method: 'GET', path, timeoutMs: 10_000 });
        this.rules.takeOver(cm.data?.[REVISION_RULES_KEY]);
        return readWorkloads(cm.data?.[WORKLOADS_KEY]) ?? {};
      } catch (err) {
        if (statusCodeOf(err) === 404) return {};
        this.log.warn({ err, retryInMs: delay }, 'cannot read the previous workload-health report; retrying');
        await abortableSleep(delay, signal);
        delay = Math.min(delay * 2, 30_000);
      }
    }
    return {};
  }
}

async function stopWatches(w: Watches): Promise<void> {
  w.abort.abort();
  await Promise.all([w.pods.stop(), w.secrets.stop()]);
  await w.done;
}
