/**
 * The webhook's own serving certificate (docs/serving-certificate.md), for installs that mount
 * none (KIM's): every replica watches the serving Secret and our webhook configurations, serves
 * the Secret's certificate (swapped in memory) and is ready only while the API server trusts
 * it. With issuer `own`, one replica at a time, elected by a Lease, writes the Secret and the
 * caBundles; with issuer `external` (direct mode: the KCP writes both) no replica writes, so the
 * Secret and the caBundle never have two writers.
 */
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import { WEBHOOK_CERT_LEASE } from '../api/runtime-names.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { KubeApiError, statusCodeOf } from '../kube/kube-errors.js';
import { kubeRequest } from '../kube/kube-request.js';
import { LeaderElector } from '../kube/leader-election.js';
import { type LeaderElectionTiming } from '../kube/leader-election-timing.js';
import { KubeListWatch } from '../kube/list-watch.js';
import { Reflector } from '../kube/reflector.js';
import { validateServingPolicy, WEBHOOK_SERVING_POLICY, type ServingPolicy } from './serving-policy.js';
import type { ServingIssuer } from './serving-secret-plan.js';
import { CertificateWriter } from './certificate-writer.js';
import { FOREIGN_SERVER_SELECTOR } from './foreign-servers.js';
import { ServedCertificate, trustedByEveryEntry } from './served-certificate.js';
import { readServingSecret } from './serving-secret-codec.js';
import {
  caBundlesOf,
  MUTATING,
  VALIDATING,
  type ConfigurationKind,
  type WebhookConfiguration,
} from './webhook-configurations.js';

/** Settings of {@link startServingCertKeeper}. */
export interface ServingCertKeeperOptions {
  readonly access: ClusterAccess;
  /** The serving Secret; its namespace is also the Lease's. */
  readonly secret: { readonly namespace: string; readonly name: string };
  /** Names the certificate must cover (the Service's). */
  readonly dnsNames: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** Who writes the Secret and the caBundle: a replica of ours (default) or someone else (the KCP). */
  readonly issuer?: ServingCertIssuer;
  readonly policy?: ServingPolicy;
  /** The Lease electing the writer (default {@link WEBHOOK_CERT_LEASE}) and its timing. */
  readonly lease?: { readonly name?: string; readonly timing?: Partial<LeaderElectionTiming> };
  /** This replica in the election (default `<POD_NAME or hostname>_<uuid>`). */
  readonly identity?: string;
  readonly logger: Logger;
  /** Told of every attempt to serve a new certificate (metrics). */
  readonly onReload?: (result: 'success' | 'failure') => void;
  readonly now?: () => number;
}

/**
 * Who writes the serving Secret and the caBundle: `own`, the replicas (one elected writer, its own
 * CA); `external`, another party (the KCP in direct mode) and the replicas only follow the Secret.
 */
export type ServingCertIssuer = ServingIssuer['kind'];

/** A running keeper. */
export interface ServingCertKeeper {
  /** What the server starts with: the Secret's certificate, or a placeholder until it has one. */
  readonly initialTls: SecureContextOptions;
  /** Where new certificates go (the server's `setSecureContext`). */
  attach(apply: (tls: SecureContextOptions) => void): void;
  /** Serves a certificate from the Secret that the API server trusts (or nobody registers us). */
  ready(): boolean;
  /** Whether this replica is the writer now. */
  isWriter(): boolean;
  /** Stops writing (releasing the Lease for another replica) and watching. */
  stop(): Promise<void>;
}

/** Starts the keeper; rejects at once if the Secret cannot be read (no access, no permission). */
export async function startServingCertKeeper(o: ServingCertKeeperOptions): Promise<ServingCertKeeper> {
  const policy = o.policy ?? WEBHOOK_SERVING_POLICY;
  validateServingPolicy(policy);
  const { namespace, name } = o.secret;
  const log = o.logger.child({ part: 'serving-cert', secret: `${namespace}/${name}` });
  const now = o.now ?? Date.now;
  const first = await readSecretOnce(o.access, namespace, name);

  const secrets = new Reflector<V1Secret>({
    name: `secret ${namespace}/${name}`,
    listerWatcher: new KubeListWatch<V1Secret>(
      o.access,
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`,
    ),
    fieldSelector: `metadata.name=${name}`,
    logger: log,
  });
  const configuration = (kind: ConfigurationKind): Reflector<WebhookConfiguration> =>
    new Reflector<WebhookConfiguration>({
      name: `${kind.kind} ${kind.name}`,
      listerWatcher: new KubeListWatch<WebhookConfiguration>(o.access, kind.path),
      fieldSelector: `metadata.name=${kind.name}`,
      logger: log,
    });
  const mutating = configuration(MUTATING);
  // Only a writer reads the validating configuration (its caBundle); readiness needs the mutating one.
  const writes = (o.issuer ?? 'own') === 'own';
  const validating = writes ? configuration(VALIDATING) : undefined;
  // Only a writer looks at the Pods of an install it takes over (./foreign-servers.ts).
  const foreignPods = writes
    ? new Reflector<V1Pod>({
        name: `pods we did not start in ${namespace}`,
        listerWatcher: new KubeListWatch<V1Pod>(
          o.access,
          `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        ),
        labelSelector: FOREIGN_SERVER_SELECTOR,
        logger: log,
      })
    : undefined;

  const served = new ServedCertificate(log, o.onReload);
  const initialTls = await served.initial(readServingSecret(first));
  const offer = (s: V1Secret): void => {
    served.offer(readServingSecret(s));
  };
  secrets.addEventHandler({
    onAdd: offer,
    onUpdate: (_old, s) => {
      offer(s);
    },
  });

  secrets.start();
  mutating.start();
  validating?.start();
  foreignPods?.start();
  const elector =
    validating && foreignPods
      ? startWriter(o, { secrets, mutating, validating, foreignPods, policy, now, log })
      : undefined;
  if (!elector) log.info('the serving certificate is written by another party; following the Secret');

  return {
    initialTls,
    attach: (apply) => {
      served.attach(apply);
    },
    ready() {
      const leaf = served.leaf();
      if (!leaf || !secrets.hasSynced() || !mutating.hasSynced()) return false;
      return trustedByEveryEntry(leaf, caBundlesOf(mutating.store.get(MUTATING.name)), now());
    },
    isWriter: () => elector?.isLeader() ?? false,
    async stop() {
      await elector?.stop();
      await Promise.all([secrets.stop(), mutating.stop(), validating?.stop(), foreignPods?.stop()]);
    },
  };
}

/** Elects this replica's writer by the Lease and runs it while leading. */
function startWriter(
  o: ServingCertKeeperOptions,
  parts: {
    readonly secrets: Reflector<V1Secret>;
    readonly mutating: Reflector<WebhookConfiguration>;
    readonly validating: Reflector<WebhookConfiguration>;
    readonly foreignPods: Reflector<V1Pod>;
    readonly policy: ServingPolicy;
    readonly now: () => number;
    readonly log: Logger;
  },
): LeaderElector {
  const { log } = parts;
  const identity = o.identity ?? `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
  const elector = new LeaderElector({
    kubeConfig: o.access,
    namespace: o.secret.namespace,
    name: o.lease?.name ?? WEBHOOK_CERT_LEASE,
    identity,
    timing: o.lease?.timing,
    logger: log,
  });
  const writer = new CertificateWriter({
    access: o.access,
    secret: o.secret,
    secrets: parts.secrets,
    mutating: parts.mutating,
    validating: parts.validating,
    foreignPods: parts.foreignPods,
    dnsNames: o.dnsNames,
    ipAddresses: o.ipAddresses ?? [],
    policy: parts.policy,
    isLeader: () => elector.isLeader(),
    logger: log,
    now: parts.now,
  });
  elector.start({
    onStartedLeading: (signal) => writer.run(signal),
    onStoppedLeading: () => {
      log.info('no longer writing the serving certificate');
    },
  });
  return elector;
}

async function readSecretOnce(
  access: ClusterAccess,
  namespace: string,
  name: string,
): Promise<V1Secret | undefined> {
  try {
    return await kubeRequest<V1Secret>(access, {
      method: 'GET',
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
      timeoutMs: 10_000,
    });
  } catch (cause) {
    if (statusCodeOf(cause) === 404) return undefined;
    const why = cause instanceof Error ? cause.message : String(cause);
    // Nothing to serve: the webhook cannot start.
    throw KubeApiError.wrap(
      `nothing to serve: no --tls-cert/--tls-key given, and the serving Secret ${namespace}/${name} ` +
        `cannot be read (${why}); give both files, or run with access to the cluster ` +
        '(in a Pod, --kubeconfig or $KUBECONFIG)',
      cause,
    );
  }
}
