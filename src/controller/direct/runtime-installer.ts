import type { KubernetesObject, V1ConfigMap, V1PodList, V1Secret } from '@kubernetes/client-node';
import { readTrustStatus, type TrustRestartStatus } from '../../api/trust-stamp.js';
import { readReport, WEBHOOK_STATUS_CONFIG_MAP, type WebhookStatusReport } from '../../api/webhook-status.js';
import { PREFLIGHT_SECRET } from '../../api/workload-health.js';
import { applyObjects } from '../../kube/apply.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { noResponseError, statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { impersonating } from '../../kube/impersonation.js';
import { webhookUserName } from '../../render/webhook-write-policy.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertFenced, UNFENCED, type LeaseFence } from '../../kube/lease-fence.js';
import { collectionPath, describeObject, objectPath } from '../../kube/resource-path.js';
import {
  atTrustBundleApi,
  servedTrustBundleApi,
  TRUST_BUNDLE_KIND,
  TRUST_BUNDLE_VERSIONS,
  trustBundleApiVersion,
  type ServedTrustBundleApi,
  type TrustBundleApi,
} from '../../kube/trust-bundle-api.js';
import { ApiDiscoveryError, discoverApi } from '../../kube/api-discovery.js';
import { trustBundleApis, type TrustBundleApis } from '../../kube/trust-bundle-discovery.js';
import type { ServingSecretContent } from '../../serving-cert/serving-secret-state.js';
import { foreignServersAmong, FOREIGN_SERVER_SELECTOR } from '../../serving-cert/foreign-servers.js';
import { putServingSecret } from '../../serving-cert/serving-secret-put.js';
import {
  applyCaBundle,
  lackingBundle,
  MUTATING,
  VALIDATING,
  type WebhookConfiguration,
} from '../../serving-cert/webhook-configurations.js';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  RESTART_RIGHTS_ROLE,
  RUNTIME_NAMESPACE,
  WEBHOOK_CERT_LEASE,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_TLS_SECRET,
} from '../../api/runtime-names.js';
import { FIELD_MANAGER, WEBHOOK_SERVICE } from '../../api/runtime-names.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/managed-labels.js';
import { ADMISSION_POLICY_NAME } from '../../render/admission-policy.js';
import { ADMISSION_POLICY_API, type AdmissionPolicyApi } from './admission-policy-plan.js';
import { applyInStages } from './apply-stages.js';
import type { WrittenObject } from './foreign-writers.js';
import type { RuntimePlan } from './runtime-manifests.js';
import { RuntimeUnreachableError } from './runtime-unreachable.js';
import { AnswerTooLargeError, requestBoundIn, type RequestBoundError } from '../../kube/request-limits.js';
import { smallerPageLimit } from '../../kube/list-budget.js';
import { METADATA_LIST_ACCEPT } from '../../kube/list-watch.js';
import type { ServingView } from './serving-certificate.js';
import {
  deploymentRollout,
  readyEndpointsOf,
  type RolloutDeployment,
  type ServiceEndpointSlices,
} from './deployment-rollout.js';

/** Readiness of the webhook Deployment, as a kubelet and the deployment controller report it. */
export interface DeploymentReadiness {
  /**
   * The webhook may be registered: the Deployment is available, or its new Pods are all Ready with
   * no old Pod left and the Service lists them (a first install need not wait `minReadySeconds`).
   */
  readonly ready: boolean;
  /** New Pods all Ready with no old Pod left, but the Service does not list them yet: look again soon. */
  readonly endpointsPending?: boolean;
  readonly message: string;
  /** The trust-bundle restarter's report on the same Deployment (same read), if any. */
  readonly trust?: TrustRestartStatus;
  /** The Deployment's resourceVersion as read (none when it does not exist): a watch follows on from it. */
  readonly resourceVersion?: string;
}

const MANAGED = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
/** Objects per page of a list on a runtime, metadata only: a few KB each, far under the answer cap (halved when not). */
const LIST_PAGE_SIZE = 100;
/** Pages of one list at most (a million objects): a server that answers a continue token forever ends. */
const MAX_LIST_PAGES = 10_000;
/** A page of {@link RuntimeInstaller.removeLabelled}'s list over the cap on an answer. */
const TOO_LARGE = Symbol('too large');
/** A page of labelled objects, metadata only. */
interface LabelledPage {
  readonly items?: readonly { readonly metadata?: { readonly name?: string; readonly namespace?: string } }[];
  readonly metadata?: { readonly continue?: string };
}
/** Waits before a forbidden policy write is tried again ({@link RuntimeInstaller} `applyPolicy`). */
const RBAC_SETTLE_MS = [100, 250, 500, 1_000, 2_000];
/** The admission policy's kinds, written as the policy writer (its parameters are the set's). */
const isPolicyKind = (o: KubernetesObject): boolean =>
  o.kind === 'MutatingAdmissionPolicy' || o.kind === 'MutatingAdmissionPolicyBinding';
/** An object's metadata alone (`managedFields` included), not its spec. */
const METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/**
 * All reads and writes on one runtime, as raw requests on the objects' own paths (no API
 * discovery, no generated client), each bounded in time. A call that gets no answer at all
 * throws {@link RuntimeUnreachableError}; `answered` tells whether any call got one. Every write
 * first checks `fence` (a sharded replica's Lease) and throws LeaseLostError without sending
 * anything when it no longer holds.
 */
export class RuntimeInstaller {
  /** Whether the runtime's API server answered a request (with any status) through this installer. */
  answered = false;

  /**
   * `parallel`: applies sent to the runtime at once where the plan lets them go together
   * (./apply-stages.ts); the connections its client keeps. `policyWriter`: the user the admission
   * policy and its binding are written as (the webhook's ServiceAccount, whose RBAC names only
   * ours: a policy can mutate anything it matches, so its writer holds no more than that).
   */
  constructor(
    private readonly access: ClusterAccess,
    private readonly timeoutMs = 10_000,
    private readonly fence: LeaseFence = UNFENCED,
    private readonly parallel = 1,
    private readonly apis: TrustBundleApis = trustBundleApis,
    policyWriter = webhookUserName(RUNTIME_NAMESPACE),
  ) {
    this.policyAccess = impersonating(access, policyWriter);
  }

  private readonly policyAccess: ClusterAccess;

  /**
   * Server-side applies the objects in order, those the order leaves free together
   * (./apply-stages.ts), each fenced; each applied object is handed to `applied`, as written,
   * with the object as the API server stored it (its resourceVersion for
   * ../../api/attestation.ts). A ClusterTrustBundle is written at the version the runtime serves
   * (TrustBundleApiNotServedError when none).
   */
  async apply(
    objects: readonly KubernetesObject[],
    applied: (object: KubernetesObject, stored: KubernetesObject | undefined) => void = () => undefined,
  ): Promise<void> {
    const one = async (written: KubernetesObject): Promise<void> => {
      const stored = isPolicyKind(written)
        ? await this.applyPolicy(written)
        : (
            await this.write('apply', () =>
              applyObjects(this.access, [written], { timeoutMs: this.timeoutMs, answers: true }),
            )
          )[0];
      applied(written, stored);
    };
    await applyInStages(objects, this.parallel, (o) =>
      o.kind === TRUST_BUNDLE_KIND ? this.atServed((api) => one(atTrustBundleApi(o, api))) : one(o),
    );
  }

  /**
   * The runtime's ClusterTrustBundle API (remembered per client; discovered when not known, but
   * for `hint`, the version the bundle was last written at there: a write that meets a 404 for
   * the resource discovers anyway).
   */
  trustBundleApi(hint?: string): Promise<TrustBundleApi> {
    const version = TRUST_BUNDLE_VERSIONS.find((v) => trustBundleApiVersion(v) === hint);
    const seed = version === undefined ? undefined : servedTrustBundleApi(version);
    return unwrapUnreachable(this.apis.get(this.access, this.discoveryGet, seed));
  }

  /** The runtime's MutatingAdmissionPolicy API, discovered now (1-2 GETs; asked on set and install passes only). */
  admissionPolicyApi(): Promise<AdmissionPolicyApi> {
    return unwrapUnreachable(discoverApi(ADMISSION_POLICY_API, this.discoveryGet));
  }

  /** Runs `call` at the served version, discovering it again after a 404 for the resource. */
  private atServed<T>(call: (api: ServedTrustBundleApi) => Promise<T>): Promise<T> {
    return unwrapUnreachable(this.apis.atServed(this.access, call, this.discoveryGet));
  }

  /** Discovery's GETs, as every other call: bounded, and telling whether the runtime answers. */
  private readonly discoveryGet = (path: string): Promise<unknown> =>
    this.call(() => kubeRequest<unknown>(this.access, { method: 'GET', path, timeoutMs: this.timeoutMs }));

  /** TLS material in a Secret on the runtime (the drift client certificate), if any. */
  async readTls(
    namespace: string,
    name: string,
  ): Promise<{ certPem: string; keyPem: string; caPem?: string } | undefined> {
    const s = await this.read<V1Secret>(
      objectPath({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace } }),
    );
    const d = s?.data ?? {};
    const dec = (k: string): string | undefined =>
      d[k] ? Buffer.from(d[k], 'base64').toString() : undefined;
    const certPem = dec('tls.crt');
    const keyPem = dec('tls.key');
    const caPem = dec('ca.crt');
    return certPem && keyPem ? { certPem, keyPem, caPem } : undefined;
  }

  /** The serving Secret in `namespace` and our webhook configurations, as they are now. */
  async readServing(namespace: string): Promise<ServingView> {
    const [secret, mutating, validating] = await Promise.all([
      this.read<V1Secret>(
        objectPath({ apiVersion: 'v1', kind: 'Secret', metadata: { name: WEBHOOK_TLS_SECRET, namespace } }),
      ),
      this.read<WebhookConfiguration>(`${MUTATING.path}/${MUTATING.name}`),
      this.read<WebhookConfiguration>(`${VALIDATING.path}/${VALIDATING.name}`),
    ]);
    return { secret, mutating, validating };
  }

  /** Whether a Pod behind the webhook Service that we did not start may still serve (a takeover). */
  async readForeignServers(namespace: string): Promise<boolean> {
    const path =
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods` +
      `?labelSelector=${encodeURIComponent(FOREIGN_SERVER_SELECTOR)}`;
    const pods = await this.read<V1PodList>(path);
    return foreignServersAmong(pods?.items ?? []);
  }

  /**
   * Writes the serving Secret: created, or replaced only if it is still `current` (409 otherwise).
   * Under our field manager, so the drift channel does not report it back as tampering.
   */
  async writeServingSecret(
    namespace: string,
    current: V1Secret | undefined,
    next: ServingSecretContent,
  ): Promise<V1Secret> {
    return await this.write('serving Secret', () =>
      putServingSecret(this.access, { namespace, name: WEBHOOK_TLS_SECRET }, current, next, {
        fieldManager: FIELD_MANAGER,
        timeoutMs: this.timeoutMs,
      }),
    );
  }

  /**
   * Sets the caBundle of every entry of the configurations in `view` (as read; 409 if they moved);
   * resolves with `view` as the writes' answers left it.
   */
  async writeCaBundle(view: ServingView, bundlePem: string): Promise<ServingView> {
    const configs = [[MUTATING, view.mutating] as const, [VALIDATING, view.validating] as const];
    let answered = view;
    for (const [kind, config] of lackingBundle(configs, bundlePem)) {
      const written = await this.write('caBundle', () =>
        applyCaBundle(this.access, kind, config, bundlePem, this.timeoutMs),
      );
      answered =
        kind === MUTATING ? { ...answered, mutating: written } : { ...answered, validating: written };
    }
    return answered;
  }

  /** Whether the webhook Deployment is rolled out and available. */
  async deploymentReadiness(namespace: string): Promise<DeploymentReadiness> {
    const d = await this.read<RolloutDeployment>(
      objectPath({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: WEBHOOK_DEPLOYMENT, namespace },
      }),
    );
    if (d === undefined) return { ready: false, message: 'the webhook Deployment does not exist' };
    const rollout = deploymentRollout(d);
    const listed = rollout.newPodsReady && (await this.readyEndpoints(namespace)) >= rollout.want;
    return {
      ready: rollout.ready || listed,
      endpointsPending: rollout.newPodsReady && !listed,
      message: listed
        ? `${rollout.want}/${rollout.want} new replicas ready, listed by the Service`
        : rollout.message,
      trust: readTrustStatus(d.metadata?.annotations),
      resourceVersion: d.metadata?.resourceVersion,
    };
  }

  /** The ready endpoints the webhook Service's EndpointSlices list (one short page: a few Pods). */
  private async readyEndpoints(namespace: string): Promise<number> {
    const slices = await this.call(() =>
      kubeRequest<ServiceEndpointSlices>(this.access, {
        method: 'GET',
        path: `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`,
        query: { labelSelector: `kubernetes.io/service-name=${WEBHOOK_SERVICE}`, limit: 10 },
        timeoutMs: this.timeoutMs,
      }),
    );
    return readyEndpointsOf(slices);
  }

  /**
   * Removes everything we installed: the webhook configurations first (a dangling webhook
   * must never block the runtime), then the webhook's objects and its serving certificate's,
   * then every object carrying our label (the synced set, the pull Secret's copies in all
   * namespaces, the restarter's rights per namespace). Namespaces stay.
   */
  async uninstall(plan: Pick<RuntimePlan, 'registration' | 'webhook' | 'manifests'>): Promise<void> {
    for (const o of plan.registration) await this.remove(o);
    // The policy goes with the registration, its binding first: it admits by parameters that go next.
    const policyApi = await this.admissionPolicyApi();
    if (policyApi.served)
      for (const kind of ['MutatingAdmissionPolicyBinding', 'MutatingAdmissionPolicy'])
        await this.remove({
          apiVersion: policyApi.apiVersion,
          kind,
          metadata: { name: ADMISSION_POLICY_NAME },
        });
    for (const o of [...plan.webhook].reverse()) await this.remove(o);
    // The serving certificate's Secret and the Lease of the writer a KIM install's webhook ran.
    const namespace = plan.manifests.namespace.metadata?.name;
    await this.remove({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: WEBHOOK_TLS_SECRET, namespace },
    });
    await this.remove({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: WEBHOOK_CERT_LEASE, namespace },
    });
    await this.removeLabelled('v1', 'Secret');
    await this.removeLabelled('v1', 'ConfigMap');
    // The restart rights per namespace, also where a narrowed list no longer names them.
    for (const kind of ['RoleBinding', 'Role'])
      await this.removeLabelled('rbac.authorization.k8s.io/v1', kind, `metadata.name=${RESTART_RIGHTS_ROLE}`);
    // At the version the runtime serves; a runtime serving none holds no bundle of ours.
    const api = await this.trustBundleApi();
    if (api.served)
      await this.atServed((served) => this.removeLabelled(served.apiVersion, TRUST_BUNDLE_KIND));
  }

  /**
   * Deletes every object of a kind that carries our label (and matches `fieldSelector`, if given),
   * read a page at a time, metadata only (the name is all it needs): each page stays under the cap
   * on an answer (a pull Secret's copies in thousands of namespaces do not), a page the runtime
   * made too large (its admin may annotate our objects) is asked again in half, down to one
   * object, and a server that never stops paging is stopped.
   */
  private async removeLabelled(apiVersion: string, kind: string, fieldSelector?: string): Promise<void> {
    let next: string | undefined;
    let limit = LIST_PAGE_SIZE;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const list = await this.call(() => this.labelledPage(apiVersion, kind, fieldSelector, limit, next));
      if (list === TOO_LARGE) {
        limit = smallerPageLimit(limit) ?? 1;
        continue;
      }
      for (const item of list.items ?? []) {
        await this.remove({
          apiVersion,
          kind,
          metadata: { name: item.metadata?.name, namespace: item.metadata?.namespace },
        });
      }
      next = list.metadata?.continue;
      if (next === undefined || next === '') return;
    }
    throw new Error(`more than ${MAX_LIST_PAGES} pages of ${kind} objects labelled ${MANAGED}`);
  }

  /**
   * One page of {@link removeLabelled}'s list; {@link TOO_LARGE} when its answer broke the cap
   * and a smaller page can be asked for (one object alone over the cap is the runtime's refusal).
   */
  private async labelledPage(
    apiVersion: string,
    kind: string,
    fieldSelector: string | undefined,
    limit: number,
    next: string | undefined,
  ): Promise<LabelledPage | typeof TOO_LARGE> {
    try {
      return await kubeRequest<LabelledPage>(this.access, {
        method: 'GET',
        path: collectionPath(apiVersion, kind),
        query: { labelSelector: MANAGED, fieldSelector, limit, continue: next },
        accept: METADATA_LIST_ACCEPT,
        timeoutMs: this.timeoutMs,
      });
    } catch (error) {
      if (limit > 1 && requestBoundIn(error) instanceof AnswerTooLargeError) return TOO_LARGE;
      throw error;
    }
  }

  /**
   * Who wrote each object when (its `managedFields`); objects that do not exist are left out. The
   * reads go out together (one round trip to a far runtime, not one per object) and ask for the
   * metadata alone.
   */
  async writersOf(objects: readonly KubernetesObject[]): Promise<WrittenObject[]> {
    const read = await Promise.all(
      objects.map((o) => this.read<KubernetesObject>(objectPath(o), METADATA_ONLY)),
    );
    return objects.flatMap((o, i) => {
      const current = read[i];
      return current
        ? [{ description: describeObject(o), managedFields: current.metadata?.managedFields ?? [] }]
        : [];
    });
  }

  /** Whether a MutatingWebhookConfiguration of ours is still registered (for tests and status). */
  async registrationPresent(): Promise<boolean> {
    return (await this.read(`${MUTATING.path}/${MUTATING_WEBHOOK_CONFIGURATION}`)) !== undefined;
  }

  /** The webhook's status report (direct mode's rollouts); empty when it wrote none yet. */
  async readWebhookReport(namespace: string): Promise<WebhookStatusReport> {
    return readReport(
      await this.read<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps/${WEBHOOK_STATUS_CONFIG_MAP}`),
    );
  }

  /**
   * Puts the preflight Secret (the candidate a rollout asks the webhook to check) on the runtime,
   * or removes it (`secret` undefined) from `namespace`.
   */
  async writePreflight(namespace: string, secret: V1Secret | undefined): Promise<void> {
    if (secret === undefined) {
      await this.remove({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: PREFLIGHT_SECRET, namespace },
      });
      return;
    }
    await this.apply([{ ...secret, metadata: { ...secret.metadata, namespace } }]);
  }

  /** GET; undefined when the object does not exist. */
  private async read<T>(path: string, accept?: string): Promise<T | undefined> {
    try {
      return await this.call(() =>
        kubeRequest<T>(this.access, { method: 'GET', path, timeoutMs: this.timeoutMs, accept }),
      );
    } catch (error) {
      if (statusCodeOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** DELETE; an object that is already gone is fine. */
  private async remove(o: KubernetesObject): Promise<void> {
    try {
      await this.write('delete', () =>
        kubeRequest(this.access, { method: 'DELETE', path: objectPath(o), timeoutMs: this.timeoutMs }),
      );
    } catch (error) {
      if (statusCodeOf(error) !== 404) throw error;
    }
  }

  /**
   * Applies the admission policy or its binding as the policy writer. Its rights were applied
   * moments before in the same pass, and the API server's authorizer sees a new binding a moment
   * after storing it: a 403 is tried again for a few seconds before it fails the pass.
   */
  private async applyPolicy(o: KubernetesObject): Promise<KubernetesObject | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const [stored] = await this.write('apply', () =>
          applyObjects(this.policyAccess, [o], { timeoutMs: this.timeoutMs, answers: true }),
        );
        return stored;
      } catch (error) {
        const wait = RBAC_SETTLE_MS[attempt];
        if (statusCodeOf(error) !== 403 || wait === undefined) throw error;
        await sleep(wait);
      }
    }
  }

  /** Runs one write call, if the fence still holds. */
  private write<T>(what: string, request: () => Promise<T>): Promise<T> {
    assertFenced(this.fence, what);
    return this.call(request);
  }

  /**
   * The call that broke a bound of calls to the runtime (the deadline, the cap on an answer), if
   * one did: every later call of this installer fails with it at once, without a request, so a
   * pass over a runtime that drips or floods ends within one call's deadline.
   */
  get refusal(): RuntimeUnreachableError | undefined {
    return this.refused;
  }

  private refused: RuntimeUnreachableError | undefined;

  /** Runs one call: notes an answer, and turns "no answer at all" into RuntimeUnreachableError. */
  private async call<T>(request: () => Promise<T>): Promise<T> {
    if (this.refused) throw this.refused;
    try {
      const result = await request();
      this.answered = true;
      return result;
    } catch (error) {
      const bound = requestBoundIn(error);
      if (bound !== undefined) {
        this.refused = new RuntimeUnreachableError(boundMessage(bound), { cause: error }, bound.boundReason);
        throw this.refused;
      }
      const silent = noResponseError(error);
      if (silent === undefined) {
        // An HTTP error is an answer; a request that could not even be made (bad PEMs) is not.
        if (statusCodeOf(error) !== undefined) this.answered = true;
        throw error;
      }
      throw new RuntimeUnreachableError(`the runtime's API server is unreachable: ${firstLine(silent)}`, {
        cause: error,
      });
    }
  }
}

function boundMessage(bound: RequestBoundError): string {
  switch (bound.boundReason) {
    case 'AnswerTooLarge':
      return `the runtime's API server answered too much: ${firstLine(bound)}`;
    case 'DeadlineExceeded':
      return `the runtime's API server is too slow: ${firstLine(bound)}`;
    default:
      return firstLine(bound);
  }
}

/** A discovery that got no answer at all fails as every other call does: the runtime is unreachable. */
async function unwrapUnreachable<T>(pending: Promise<T>): Promise<T> {
  try {
    return await pending;
  } catch (error) {
    if (error instanceof ApiDiscoveryError && error.cause instanceof RuntimeUnreachableError)
      throw error.cause;
    throw error;
  }
}

function firstLine(error: Error): string {
  return error.message.split('\n')[0]?.slice(0, 300) ?? 'unknown error';
}
