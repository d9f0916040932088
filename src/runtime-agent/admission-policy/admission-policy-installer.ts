/**
 * The runtime agent's installer of the admission policy (docs/admission-policy.md, "Per runtime:
 * who installs it"): on the agent's leader, every `intervalMs` and at once when the webhook's config, trust
 * bundle or trust capability changes, discovery says which MutatingAdmissionPolicy version the
 * runtime serves (../../kube/api-discovery.ts: `v1`, else `v1beta1`, else none), the policy's three
 * objects are read by name, ./install-decision.ts decides, and what changed is server-side applied
 * under the agent's own field manager, while this replica still leads. The admission path in force
 * goes into the status report (direct mode) under its own key, when it changed or a term began.
 *
 * The identity that installs is the webhook's ServiceAccount, whose rights reach only our names
 * (../../render/webhook-rbac.ts, ../../render/webhook-admission-policy-rights.ts). KIM applies one
 * manifest set to runtimes of every version and cannot create a kind a runtime does not serve, so
 * KIM's manifests carry only those rights; the kinds that depend on the version come from here.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  ADMISSION_PATH_KEY,
  ADMISSION_POLICY_API,
  ADMISSION_POLICY_FIELD_MANAGER,
  type AdmissionPathReport,
  type AdmissionPolicyVersion,
} from '../../api/admission-path-report.js';
import { abortableSleep } from '../../kube/abortable-sleep.js';
import { Backoff } from '../../kube/backoff.js';
import { discoverApi, discoveryGet } from '../../kube/api-discovery.js';
import { applyConfigMapData, applyObjects } from '../../kube/apply.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import type { ApiChoice, ServedApi } from '../../kube/served-api.js';
import { part } from '../../process/part-group.js';
import { ADMISSION_POLICY_NAME } from '../../render/admission-policy.js';
import type { LeaderPart } from '../runtime-agent.js';
import {
  ADMISSION_POLICY_HASH_ANNOTATION,
  decideInstall,
  passWrites,
  type FoundObject,
  type FoundObjects,
  type LoadedState,
  type Manifest,
} from './install-decision.js';

/** Default time between two passes (a runtime upgraded to a minor that serves the API is found then). */
export const DEFAULT_ADMISSION_POLICY_INTERVAL_MS = 5 * 60_000;
/** The first wait after a failed pass; it doubles with each failure in a row, up to the interval. */
export const ADMISSION_POLICY_RETRY_MS = 5_000;
/** Bound of each call. */
const CALL_TIMEOUT_MS = 10_000;

/** Where the report goes. */
type StatusTarget = { readonly namespace: string; readonly name: string } | undefined;

/** The installer's calls to the runtime's API server (see {@link clusterCalls}). */
export interface AdmissionPolicyCalls {
  /** Which MutatingAdmissionPolicy version the runtime serves. */
  discover(): Promise<ApiChoice<AdmissionPolicyVersion>>;
  /** The parameters (in `namespace`), the policy and the binding at `api`, each read by name. */
  found(api: ServedApi<AdmissionPolicyVersion>, namespace: string): Promise<FoundObjects>;
  /** Server-side applies `objects`, in order, under the agent's field manager. */
  apply(objects: readonly Manifest[]): Promise<void>;
  /** Writes the report's text into the status ConfigMap, where there is one. */
  publish(text: string): Promise<void>;
}

/** Settings of {@link AdmissionPolicyInstaller}. */
export interface AdmissionPolicyInstallerOptions {
  readonly access: ClusterAccess;
  readonly logger: Logger;
  /** The webhook's state the policy is rendered from, read at each pass. */
  readonly loaded: () => LoadedState;
  /** false where the KCP installs the policy (direct mode): the agent only reports. */
  readonly installsHere: boolean;
  /** Where the report goes (direct mode); undefined: logs only. */
  readonly statusConfigMap: StatusTarget;
  /** Time between two passes (default {@link DEFAULT_ADMISSION_POLICY_INTERVAL_MS}). */
  readonly intervalMs?: number;
  /** Replace the calls to the API server (unit tests; default {@link clusterCalls}). */
  readonly calls?: AdmissionPolicyCalls;
  /** Replaces the wait between passes (unit tests; default {@link abortableSleep}). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** The installer across terms: {@link refresh} reaches the pass of the term under way. */
export class AdmissionPolicyInstaller {
  private readonly log: Logger;
  private readonly calls: AdmissionPolicyCalls;
  private wake = new AbortController();
  private last: AdmissionPathReport | undefined;

  constructor(private readonly o: AdmissionPolicyInstallerOptions) {
    this.log = o.logger.child({ part: 'admission-policy' });
    this.calls = o.calls ?? clusterCalls(o.access, o.statusConfigMap);
  }

  /** The path last found (tests, debugging); undefined before a first pass of a term. */
  report(): AdmissionPathReport | undefined {
    return this.last;
  }

  /** Pass again now (the config, the bundle or the capability changed). */
  refresh(): void {
    this.wake.abort();
  }

  /** The passes of one term of the agent's leadership. */
  readonly leaderPart: LeaderPart = (leadership) => {
    const term = new AbortController();
    let running: Promise<void> = Promise.resolve();
    return part('admission-policy installer', {
      start: () => {
        running = this.run(term.signal, () => leadership.isLeader());
      },
      stop: async () => {
        term.abort();
        await running;
      },
    });
  };

  private async run(signal: AbortSignal, leads: () => boolean): Promise<void> {
    const interval = this.o.intervalMs ?? DEFAULT_ADMISSION_POLICY_INTERVAL_MS;
    const sleep = this.o.sleep ?? abortableSleep;
    // A failed pass (an API server restarting, a write refused a moment) is tried again soon;
    // the webhook admits meanwhile, so the wait grows to the interval, not beyond.
    const retry = new Backoff({ baseMs: Math.min(ADMISSION_POLICY_RETRY_MS, interval), maxMs: interval });
    // Per term: a new term writes its report again.
    let written: string | undefined;
    while (!signal.aborted) {
      // Before the pass: a refresh during it ends the wait after it.
      this.wake = new AbortController();
      let wait = interval;
      try {
        written = await this.pass(leads, written);
        retry.reset();
      } catch (err) {
        if (stopped(signal)) return;
        wait = retry.next();
        this.log.warn({ err, retryInMs: wait }, 'cannot install the admission policy; trying again');
      }
      await sleep(wait, AbortSignal.any([signal, this.wake.signal]));
    }
  }

  /** One pass; resolves with the report text written (or kept). */
  private async pass(leads: () => boolean, written: string | undefined): Promise<string | undefined> {
    const api = await this.calls.discover();
    const loaded = this.o.loaded();
    const found: FoundObjects = api.served
      ? await this.calls.found(api, loaded.namespace)
      : { params: undefined, policy: undefined, binding: undefined };
    const decision = decideInstall({ api, installsHere: this.o.installsHere, found, loaded });
    const writes = passWrites(decision, leads(), written);
    if (writes === undefined) return written;
    if (writes.apply.length > 0) {
      await this.calls.apply(writes.apply);
      this.log.info(
        { objects: writes.apply.map((m) => m.kind), api: decision.report.api },
        'admission policy installed',
      );
    }
    this.last = decision.report;
    if (writes.report === undefined) return written;
    this.log.info(decision.report, 'admission path');
    await this.calls.publish(writes.report);
    return writes.report;
  }
}

/** The calls through `access`, each bounded by {@link CALL_TIMEOUT_MS}; the report to `target`. */
export function clusterCalls(access: ClusterAccess, target: StatusTarget): AdmissionPolicyCalls {
  const read = async (path: string): Promise<FoundObject | undefined> => {
    try {
      const o = await kubeRequest<KubernetesObject>(access, {
        method: 'GET',
        path,
        timeoutMs: CALL_TIMEOUT_MS,
      });
      return {
        managers: (o.metadata?.managedFields ?? []).flatMap((f) =>
          f.manager === undefined ? [] : [f.manager],
        ),
        hash: o.metadata?.annotations?.[ADMISSION_POLICY_HASH_ANNOTATION],
      };
    } catch (error) {
      if (statusCodeOf(error) === 404) return undefined;
      throw error;
    }
  };
  return {
    discover: () => discoverApi(ADMISSION_POLICY_API, discoveryGet(access, CALL_TIMEOUT_MS)),
    found: async (api, namespace) => ({
      params: await read(`/api/v1/namespaces/${namespace}/configmaps/${ADMISSION_POLICY_NAME}`),
      policy: await read(`${api.path}/${ADMISSION_POLICY_NAME}`),
      binding: await read(`/apis/${api.apiVersion}/mutatingadmissionpolicybindings/${ADMISSION_POLICY_NAME}`),
    }),
    apply: async (objects) => {
      await applyObjects(access, objects.map(asObject), {
        fieldManager: ADMISSION_POLICY_FIELD_MANAGER,
        timeoutMs: CALL_TIMEOUT_MS,
      });
    },
    publish: async (text) => {
      if (target === undefined) return;
      await applyConfigMapData(
        access,
        target,
        { [ADMISSION_PATH_KEY]: text },
        { fieldManager: ADMISSION_POLICY_FIELD_MANAGER, timeoutMs: CALL_TIMEOUT_MS },
      );
    },
  };
}

const asObject = (o: object): KubernetesObject => o;

/** Whether the term ended (a function: the loop's own check narrows `aborted` to false). */
const stopped = (signal: AbortSignal): boolean => signal.aborted;
