import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CertificatesV1beta1Api,
  CoreV1Api,
  VersionApi,
  type KubeConfig,
  type KubernetesObject,
  type V1Secret,
} from '@kubernetes/client-node';
import { applyJsonObjects, FIELD_MANAGER } from '../../kube/apply.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import type { ServingSecretContent } from '../../pki/serving-secret-state.js';
import { putServingSecret } from '../../webhook/serving-cert/serving-secret-put.js';
import {
  applyCaBundle,
  lackingBundle,
  MUTATING,
  VALIDATING,
  type WebhookConfiguration,
} from '../../webhook/serving-cert/webhook-configurations.js';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  WEBHOOK_CERT_LEASE,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_TLS_SECRET,
} from '../../api/runtime-names.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../webhook/managed-labels.js';
import { describeObject, objectApiFor } from '../../kube/apply.js';
import type { WrittenObject } from './foreign-writers.js';
import type { RuntimePlan } from './runtime-manifests.js';
import type { ServingView } from './serving-certificate.js';
import { withTimeout } from './with-timeout.js';

/** The runtime's API server could not be reached; says why. */
export class RuntimeUnreachableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RuntimeUnreachableError';
  }
}

/** Readiness of the webhook Deployment, as a kubelet and the deployment controller report it. */
export interface DeploymentReadiness {
  readonly ready: boolean;
  readonly message: string;
}

const MANAGED = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** All reads and writes on one runtime; every call is bounded in time. */
export class RuntimeInstaller {
  private readonly core: CoreV1Api;

  constructor(
    private readonly kc: KubeConfig,
    private readonly timeoutMs = 10_000,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Checks that the API server answers; throws RuntimeUnreachableError otherwise. */
  async probe(): Promise<void> {
    try {
      await withTimeout(
        this.kc.makeApiClient(VersionApi).getCode(),
        Math.min(this.timeoutMs, 5_000),
        'the API server',
      );
    } catch (cause) {
      throw new RuntimeUnreachableError(`the runtime's API server is unreachable: ${messageOf(cause)}`, {
        cause,
      });
    }
  }

  /** Server-side applies the objects, in order. */
  async apply(objects: readonly KubernetesObject[]): Promise<void> {
    await withTimeout(
      applyJsonObjects(this.kc, objects),
      this.timeoutMs * Math.max(1, objects.length),
      'apply',
    );
  }

  /** TLS material in a Secret on the runtime (the drift client certificate), if any. */
  async readTls(
    namespace: string,
    name: string,
  ): Promise<{ certPem: string; keyPem: string; caPem?: string } | undefined> {
    try {
      const s = await withTimeout(
        this.core.readNamespacedSecret({ name, namespace }),
        this.timeoutMs,
        'read TLS Secret',
      );
      const d = s.data ?? {};
      const dec = (k: string): string | undefined =>
        d[k] ? Buffer.from(d[k], 'base64').toString() : undefined;
      const certPem = dec('tls.crt');
      const keyPem = dec('tls.key');
      const caPem = dec('ca.crt');
      return certPem && keyPem ? { certPem, keyPem, ...(caPem ? { caPem } : {}) } : undefined;
    } catch (error) {
      if (statusCodeOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** The serving Secret in `namespace` and our webhook configurations, as they are now. */
  async readServing(namespace: string): Promise<ServingView> {
    const read = async <T>(path: string): Promise<T | undefined> => {
      try {
        return await kubeRequest<T>(this.kc, { method: 'GET', path, timeoutMs: this.timeoutMs });
      } catch (error) {
        if (statusCodeOf(error) === 404) return undefined;
        throw error;
      }
    };
    const [secret, mutating, validating] = await Promise.all([
      read<V1Secret>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${WEBHOOK_TLS_SECRET}`),
      read<WebhookConfiguration>(`${MUTATING.path}/${MUTATING.name}`),
      read<WebhookConfiguration>(`${VALIDATING.path}/${VALIDATING.name}`),
    ]);
    return { secret, mutating, validating };
  }

  /**
   * Writes the serving Secret: created, or replaced only if it is still `current` (409 otherwise).
   * Under our field manager, so the drift channel does not report it back as tampering.
   */
  async writeServingSecret(
    namespace: string,
    current: V1Secret | undefined,
    next: ServingSecretContent,
  ): Promise<void> {
    await putServingSecret(this.kc, { namespace, name: WEBHOOK_TLS_SECRET }, current, next, {
      fieldManager: FIELD_MANAGER,
      timeoutMs: this.timeoutMs,
    });
  }

  /** Sets the caBundle of every entry of the configurations in `view` (as read; 409 if they moved). */
  async writeCaBundle(view: ServingView, bundlePem: string): Promise<void> {
    const configs = [[MUTATING, view.mutating] as const, [VALIDATING, view.validating] as const];
    for (const [kind, config] of lackingBundle(configs, bundlePem))
      await applyCaBundle(this.kc, kind, config, bundlePem, this.timeoutMs);
  }

  /** Whether the webhook Deployment is rolled out and available. */
  async deploymentReadiness(namespace: string): Promise<DeploymentReadiness> {
    try {
      const d = await withTimeout(
        this.kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace }),
        this.timeoutMs,
        'read Deployment',
      );
      const want = d.spec?.replicas ?? 1;
      const s = d.status ?? {};
      const observed = (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
      const ready = observed && (s.updatedReplicas ?? 0) >= want && (s.availableReplicas ?? 0) >= want;
      return {
        ready,
        message: ready
          ? `${s.availableReplicas ?? 0}/${want} replicas available`
          : `waiting for the rollout: ${s.updatedReplicas ?? 0} updated, ${s.availableReplicas ?? 0} available of ${want}${observed ? '' : ' (not yet observed)'}`,
      };
    } catch (error) {
      if (statusCodeOf(error) === 404)
        return { ready: false, message: 'the webhook Deployment does not exist' };
      throw error;
    }
  }

  /**
   * Removes everything we installed: the webhook configurations first (a dangling webhook
   * must never block the runtime), then the webhook's objects and its serving certificate's,
   * then every object carrying our label (the synced set and the pull Secret's copies in all
   * namespaces). Namespaces stay.
   */
  async uninstall(plan: Pick<RuntimePlan, 'registration' | 'webhook' | 'manifests'>): Promise<void> {
    const objects = objectApiFor(this.kc);
    const remove = async (o: KubernetesObject): Promise<void> => {
      try {
        await withTimeout(objects.delete(o), this.timeoutMs, `delete ${o.kind ?? ''}`);
      } catch (error) {
        if (statusCodeOf(error) !== 404) throw error;
      }
    };
    for (const o of plan.registration) await remove(o);
    for (const o of [...plan.webhook].reverse()) await remove(o);
    // The serving certificate's Secret and the Lease of the writer a KIM install's webhook ran.
    const namespace = plan.manifests.namespace.metadata?.name;
    await remove({ apiVersion: 'v1', kind: 'Secret', metadata: { name: WEBHOOK_TLS_SECRET, namespace } });
    await remove({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: WEBHOOK_CERT_LEASE, namespace },
    });
    const secrets = await withTimeout(
      this.core.listSecretForAllNamespaces({ labelSelector: MANAGED }),
      this.timeoutMs,
      'list Secrets',
    );
    for (const s of secrets.items) await remove({ apiVersion: 'v1', kind: 'Secret', metadata: s.metadata });
    const maps = await withTimeout(
      this.core.listConfigMapForAllNamespaces({ labelSelector: MANAGED }),
      this.timeoutMs,
      'list ConfigMaps',
    );
    for (const m of maps.items) await remove({ apiVersion: 'v1', kind: 'ConfigMap', metadata: m.metadata });
    const bundles = await withTimeout(
      this.kc.makeApiClient(CertificatesV1beta1Api).listClusterTrustBundle({ labelSelector: MANAGED }),
      this.timeoutMs,
      'list ClusterTrustBundles',
    );
    for (const b of bundles.items) {
      await remove({
        apiVersion: 'certificates.k8s.io/v1beta1',
        kind: 'ClusterTrustBundle',
        metadata: b.metadata,
      });
    }
  }

  /** Who wrote each object when (its `managedFields`); objects that do not exist are left out. */
  async writersOf(objects: readonly KubernetesObject[]): Promise<WrittenObject[]> {
    const api = objectApiFor(this.kc);
    const out: WrittenObject[] = [];
    for (const o of objects) {
      try {
        const current = await withTimeout(
          api.read({
            apiVersion: o.apiVersion,
            kind: o.kind,
            metadata: { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace },
          }),
          this.timeoutMs,
          `read ${o.kind ?? ''}`,
        );
        out.push({ description: describeObject(o), managedFields: current.metadata?.managedFields ?? [] });
      } catch (error) {
        if (statusCodeOf(error) !== 404) throw error;
      }
    }
    return out;
  }

  /** Whether a MutatingWebhookConfiguration of ours is still registered (for tests and status). */
  async registrationPresent(): Promise<boolean> {
    try {
      await withTimeout(
        this.kc
          .makeApiClient(AdmissionregistrationV1Api)
          .readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION }),
        this.timeoutMs,
        'read registration',
      );
      return true;
    } catch (error) {
      if (statusCodeOf(error) === 404) return false;
      throw error;
    }
  }
}

function messageOf(error: unknown): string {
  const raw = error instanceof Error ? error.message : String(error);
  // client-node errors carry headers and bodies; the first line is what a person needs.
  return raw.split('\n')[0]?.slice(0, 300) ?? 'unknown error';
}
