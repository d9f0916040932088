/**
 * The I/O of one reconcile ({@link BootstrapperOps}) over the KCP and one runtime: the
 * RuntimeBootstrapper's finalizer on the KCP, and everything on the runtime through a
 * {@link RuntimeInstaller} made from its kubeconfig Secret, whose writes are fenced by `fence`
 * (a sharded replica's Lease).
 */
import { isAdmissionPolicyObject } from './admission-policy-plan.js';
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { AttestedObject } from '../../api/attestation.js';
import {
  RTB_FINALIZER,
  kubeconfigSecretOf,
  type RuntimeBootstrapper,
  runtimeBootstrappersPath,
} from '../../api/runtime-bootstrapper.js';
import {
  CA_BUNDLE_FIELD_MANAGER,
  WATCHER_TLS_SECRET,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_TLS_SECRET,
} from '../../api/runtime-names.js';
import { FIELD_MANAGER } from '../../api/runtime-names.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { createListerWatcher } from '../../kube/list-watch.js';
import type { LeaseFence } from '../../kube/lease-fence.js';
import type { ReadonlyStore } from '../../kube/store.js';
import type { CertificateAuthority } from '../../pki/certificate-authority.js';
import { issueCertificate } from '../../pki/issue-certificate.js';
import { needsRenewal } from '../../pki/renewal.js';
import { leafNotAfter } from '../../pki/certificate-expiry.js';
import { executeSecretWrite } from '../../serving-cert/serving-secret-write.js';
import { readServingSecret } from '../../serving-cert/serving-secret-codec.js';
import { MUTATING, VALIDATING } from '../../serving-cert/webhook-configurations.js';
import { foreignWritesAfterOurs } from './foreign-writers.js';
import { RUNTIME_MAX_SOCKETS, type RuntimeClientPool } from './runtime-clients.js';
import { domainOf, hostOf } from './runtime-domain.js';
import { preflightSecret } from './preflight-candidate.js';
import { RuntimeIdentities } from './runtime-identity.js';
import { RuntimeInstaller } from './runtime-installer.js';
import { trustBundleApis } from '../../kube/trust-bundle-discovery.js';
import { webhookUserName } from '../../render/webhook-write-policy.js';
import type { RolloutDeployment } from './deployment-rollout.js';
import { trustSeen, type RolloutWatches } from './rollout-watch.js';
import { isSetObject, type SetLedger } from './set-writes.js';
import type { DriftSettings } from './runtime-manifests.js';
import { registrationAnswers, type ServingSettings } from './serving-certificate.js';
import type { BootstrapperOps } from './state-context.js';

/** What the ops of a reconcile read and write. */
export interface RuntimeOpsDeps {
  readonly kcp: ClusterAccess;
  readonly kubeconfigSecrets: ReadonlyStore<V1Secret>;
  readonly pool: RuntimeClientPool;
  /** The CA that signs, and the bundle of CAs to trust (two during a CA rotation). */
  readonly cas: { current(): CertificateAuthority; trustBundle(): string };
  /** The drift channel; off when undefined. */
  readonly drift?: {
    readonly listenerUrl: string;
    readonly clientValidityMs?: number;
    readonly renewBeforeMs?: number;
  };
  readonly runtimeTimeoutMs?: number;
  /** The webhook's namespace on the runtime. */
  readonly namespace: string;
  readonly serving: ServingSettings;
  /** Told the number of runtime clients after one was made. */
  readonly clients: (n: number) => void;
  /** What the passes wrote of the set to the runtime of a CR key (./set-writes.ts): its record's, shared by its passes. */
  readonly written: (crKey: string) => SetLedger;
  /** Who the KCP is on each runtime, per client (default: one for the process). */
  readonly identities?: RuntimeIdentities;
  /** Follow rollouts under way (off when undefined: they are polled). */
  readonly rollouts?: RolloutWatches;
}

const identities = new RuntimeIdentities();

/** The ops of a reconcile, and what the pass learnt beside them. */
export interface RuntimeOps extends BootstrapperOps {
  /** notAfter (epoch ms) of the drift client certificate this pass gave the runtime, if it got to it. */
  driftNotAfter(): number | undefined;
  /**
   * The CR's resourceVersion this pass's status is based on: the one it read, or what its own
   * finalizer write left (that write bumps it, and must not make the pass's status conflict).
   */
  resourceVersion(): string | undefined;
}

/** The ops of one reconcile of `rb`; runtime writes are sent only while `fence` holds. */
export function runtimeOps(
  rb: RuntimeBootstrapper,
  d: RuntimeOpsDeps,
  fence: LeaseFence,
  urgent = false,
): RuntimeOps {
  let installer: RuntimeInstaller | undefined;
  let client: ClusterAccess | undefined;
  let drift: DriftSettings | undefined;
  let serverHost = '';
  const namespace = d.namespace;
  const observed: AttestedObject[] = [];
  const crKey = `${rb.metadata.namespace}/${rb.metadata.name}`;
  const ledger = d.written(crKey);
  // Per API server: a kubeconfig that names another server (a runtime rebuilt under the same ID)
  // starts from nothing known, so it gets the whole set.
  let serverKey = '';
  const note = (o: KubernetesObject, resourceVersion: string | undefined): void => {
    if (resourceVersion) observed.push(attestedOf(o, resourceVersion));
  };
  const applied = (o: KubernetesObject, stored: KubernetesObject | undefined): void => {
    // The runtime's attestor may read only what the webhook's RBAC names: the admission policy's
    // objects are not among them, so they are not attested (docs/admission-policy.md).
    if (!isAdmissionPolicyObject(o)) note(o, stored?.metadata?.resourceVersion);
    if (isSetObject(o)) ledger.wrote(serverKey, o);
  };
  const need = (): RuntimeInstaller => {
    if (!installer) throw new Error('internal: runtime not connected');
    return installer;
  };
  let resourceVersion = rb.metadata.resourceVersion;
  return {
    addFinalizer: async () => {
      resourceVersion = await setFinalizers(d.kcp, rb, [...(rb.metadata.finalizers ?? []), RTB_FINALIZER]);
    },
    releaseFinalizer: async () => {
      resourceVersion = await setFinalizers(
        d.kcp,
        rb,
        (rb.metadata.finalizers ?? []).filter((f) => f !== RTB_FINALIZER),
      );
      d.pool.drop(rb.spec.runtimeID);
    },
    resourceVersion: () => resourceVersion,
    connect: () => {
      const ref = kubeconfigSecretOf(rb);
      const secret = d.kubeconfigSecrets.get(`${ref.namespace}/${ref.name}`);
      const data = secret?.data?.[ref.key];
      if (!data) throw new Error(`kubeconfig Secret ${ref.namespace}/${ref.name} (key ${ref.key}) not found`);
      // No request here: the first call of the pass tells whether the runtime answers.
      const access = d.pool.get(rb.spec.runtimeID, data, urgent);
      client = access;
      const server = access.getCurrentCluster()?.server;
      serverHost = hostOf(server);
      serverKey = server ?? '';
      d.clients(d.pool.size);
      installer = new RuntimeInstaller(
        access,
        d.runtimeTimeoutMs,
        fence,
        RUNTIME_MAX_SOCKETS,
        trustBundleApis,
        webhookUserName(namespace),
      );
    },
    answered: () => installer?.answered ?? false,
    drift: async () => {
      const settings = d.drift;
      if (!settings) return undefined;
      if (drift) return drift;
      // The drift registration skips the KCP's own writes by this user (learnt once per client).
      const kcpUsername = client
        ? await (d.identities ?? identities).usernameOf(client, d.runtimeTimeoutMs)
        : undefined;
      const ca = d.cas.current();
      const bundle = d.cas.trustBundle();
      const domain = domainOf(rb, serverHost);
      const current = await need().readTls(namespace, WATCHER_TLS_SECRET);
      const renewBefore = settings.renewBeforeMs ?? 7 * 24 * 3600_000;
      const reusable =
        current !== undefined &&
        current.caPem === bundle &&
        !needsRenewal(current.certPem, ca.certPem, new Date(), renewBefore, {
          commonName: rb.spec.runtimeID,
          dnsName: domain,
        });
      if (reusable) {
        drift = {
          listenerUrl: settings.listenerUrl,
          clientTls: { certPem: current.certPem, keyPem: current.keyPem, caPem: bundle },
          kcpUsername,
        };
        return drift;
      }
      // CN = runtime ID, SAN = its domain: what the KCP listener verifies and pins.
      const issued = await issueCertificate(ca, {
        commonName: rb.spec.runtimeID,
        dnsNames: [domain],
        usage: 'client',
        validityMs: settings.clientValidityMs ?? 30 * 24 * 3600_000,
      });
      drift = {
        listenerUrl: settings.listenerUrl,
        clientTls: { certPem: issued.certPem, keyPem: issued.keyPem, caPem: bundle },
        kcpUsername,
      };
      return drift;
    },
    apply: async (objects, set) => {
      await need().apply(objects, applied);
      if (set !== undefined) ledger.committed(serverKey, set);
    },
    register: async (objects) => {
      const answers: KubernetesObject[] = [];
      await need().apply(objects, (o, stored) => {
        applied(o, stored);
        if (stored !== undefined) answers.push(stored);
      });
      return registrationAnswers(answers);
    },
    written: () => ledger.get(serverKey),
    // The version the status says the bundle was last written at stands in for discovery: a
    // rotation costs no discovery requests, and an upgrade that took that version away shows as
    // a 404, which discovers.
    trustBundleApi: () => need().trustBundleApi(rb.status?.clusterTrustBundleAPI),
    admissionPolicyApi: () => need().admissionPolicyApi(),
    deploymentReadiness: () => need().deploymentReadiness(namespace),
    followRollout: (readiness) =>
      client !== undefined &&
      readiness.resourceVersion !== undefined &&
      d.rollouts?.follow(
        crKey,
        createListerWatcher<RolloutDeployment>(client, `/apis/apps/v1/namespaces/${namespace}/deployments`),
        WEBHOOK_DEPLOYMENT,
        {
          resourceVersion: readiness.resourceVersion,
          message: readiness.message,
          trust: trustSeen(readiness.trust),
        },
      ) === true,
    uninstall: async (plan) => {
      // Whatever happens to the removal, what the runtime holds is no longer what was written.
      ledger.forget(serverKey);
      await need().uninstall(plan);
    },
    foreignWrites: async (objects) =>
      foreignWritesAfterOurs(await need().writersOf(objects), [FIELD_MANAGER, CA_BUNDLE_FIELD_MANAGER]),
    readServing: async () => {
      const view = await need().readServing(namespace);
      const group = 'admissionregistration.k8s.io/v1';
      note(
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: WEBHOOK_TLS_SECRET, namespace } },
        view.secret?.metadata?.resourceVersion,
      );
      note(
        { apiVersion: group, kind: MUTATING.kind, metadata: { name: MUTATING.name } },
        view.mutating?.metadata?.resourceVersion,
      );
      note(
        { apiVersion: group, kind: VALIDATING.kind, metadata: { name: VALIDATING.name } },
        view.validating?.metadata?.resourceVersion,
      );
      return view;
    },
    readForeignServers: () => need().readForeignServers(namespace),
    writeServingSecret: async (current, write) => {
      const next = await executeSecretWrite(readServingSecret(current), write, {
        now: d.serving.now(),
        dnsNames: d.serving.dnsNames,
        ipAddresses: d.serving.ipAddresses,
        externalCa: d.cas.current(),
      });
      const written = await need().writeServingSecret(namespace, current, next);
      note(written, written.metadata?.resourceVersion);
      return written;
    },
    writeCaBundle: async (view, bundlePem) => {
      const answered = await need().writeCaBundle(view, bundlePem);
      // A configuration not written is noted again at the version it was read at: the same record.
      for (const c of [answered.mutating, answered.validating])
        if (c !== undefined) note(c, c.metadata?.resourceVersion);
      return answered;
    },
    readWebhookReport: () => need().readWebhookReport(namespace),
    writePreflight: (candidate) =>
      need().writePreflight(namespace, candidate ? preflightSecret(candidate, namespace) : undefined),
    observed: () => observed,
    driftNotAfter: () => leafNotAfter(drift?.clientTls?.certPem),
    refusal: () => installer?.refusal,
  };
}

function attestedOf(o: KubernetesObject, resourceVersion: string): AttestedObject {
  return {
    apiVersion: o.apiVersion ?? '',
    kind: o.kind ?? '',
    namespace: o.metadata?.namespace ?? '',
    name: o.metadata?.name ?? '',
    resourceVersion,
  };
}

/** The RuntimeBootstrapper's path on the KCP, with a subresource (`/status`) or none. */
export function bootstrapperPath(rb: RuntimeBootstrapper, sub = ''): string {
  return `${runtimeBootstrappersPath(rb.metadata.namespace)}/${rb.metadata.name}${sub}`;
}

/** Sets the CR's finalizers; resolves the resourceVersion the write stored. */
async function setFinalizers(
  kcp: ClusterAccess,
  rb: RuntimeBootstrapper,
  finalizers: string[],
): Promise<string | undefined> {
  // resourceVersion makes it a compare-and-swap: a concurrent change fails with 409 and retries.
  const stored = await kubeRequest<RuntimeBootstrapper>(kcp, {
    method: 'PATCH',
    path: bootstrapperPath(rb),
    body: { metadata: { finalizers, resourceVersion: rb.metadata.resourceVersion } },
    timeoutMs: 15_000,
  });
  return stored.metadata.resourceVersion;
}
