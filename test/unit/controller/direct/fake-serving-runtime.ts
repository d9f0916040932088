/**
 * A runtime's serving objects held in memory, for the state machine's unit tests: the Secret and
 * our two webhook configurations, with resourceVersions (a write planned from an old version
 * fails with 409, as the API server answers), a manual clock, and the API server's view of each
 * CA (since when every caBundle has held it), so a test can check that a certificate was never
 * served before its CA had settled.
 */
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type {
  RegistrationAnswers,
  ServingView,
} from '../../../../src/controller/direct/serving-certificate.js';
import type { ServingSettings } from '../../../../src/controller/direct/serving-certificate.js';
import { KubeApiError } from '../../../../src/kube/kube-errors.js';
import type { CertificateAuthority } from '../../../../src/pki/certificate-authority.js';
import { issuedBy, parseCertificates } from '../../../../src/pki/pem-certificates.js';
import { KCP_SERVING_POLICY, type ServingPolicy } from '../../../../src/serving-cert/serving-policy.js';
import type { SecretWrite } from '../../../../src/serving-cert/serving-secret-plan.js';
import { executeSecretWrite } from '../../../../src/serving-cert/serving-secret-write.js';
import { readServingSecret, servingSecretBody } from '../../../../src/serving-cert/serving-secret-codec.js';
import {
  caBundlesOf,
  lackingBundle,
  MUTATING,
  VALIDATING,
  type WebhookConfiguration,
} from '../../../../src/serving-cert/webhook-configurations.js';
import { webhookServiceDnsNames, WEBHOOK_TLS_SECRET } from '../../../../src/api/runtime-names.js';
import type { LastStateFn } from '../../../../src/controller/direct/state-machine.js';
import type { BootstrapperOps } from '../../../../src/controller/direct/state-context.js';

export const DNS = webhookServiceDnsNames('kyma-system');

/**
 * A last state that adds nothing to the outcome of the states' work: the states' own tests run
 * without the looks at the webhook's report (those are ./observe-state.test.ts's).
 */
/** Ops where every call but `over` fails ('not used here'); the runtime answered, nothing broke a bound. */
export function unusedOps(over: Partial<BootstrapperOps>): BootstrapperOps {
  const none = (): Promise<never> => Promise.reject(new Error('not used here'));
  return {
    addFinalizer: none,
    releaseFinalizer: none,
    connect: () => {
      throw new Error('not used here');
    },
    answered: () => true,
    drift: none,
    apply: none,
    register: none,
    trustBundleApi: none,
    admissionPolicyApi: none,
    deploymentReadiness: none,
    uninstall: none,
    foreignWrites: none,
    readServing: none,
    readForeignServers: none,
    writeServingSecret: none,
    writeCaBundle: none,
    readWebhookReport: none,
    observed: () => [],
    refusal: () => undefined,
    writePreflight: none,
    ...over,
  };
}

export const endOfWork: LastStateFn = (_ctx, found, outcome) =>
  Promise.resolve({ outcome, servingCheckedUntil: found.servingCheckedUntil, workloadsLookedAt: undefined });
export const START = Date.parse('2026-11-22T10:00:00Z');
const REF = { namespace: 'kyma-system', name: WEBHOOK_TLS_SECRET };

const conflict = (what: string): KubeApiError =>
  new KubeApiError(`${what} was modified`, { statusCode: 409, reason: 'Conflict' });
const clone = <T>(o: T): T => structuredClone(o);
const fingerprintsOf = (pem: string): string[] =>
  parseCertificates(pem).certificates.map((c) => c.fingerprint);

export class FakeServingRuntime {
  now = START;
  secret: V1Secret | undefined;
  mutating: WebhookConfiguration | undefined;
  validating: WebhookConfiguration | undefined;
  /** Since when every caBundle entry holds each CA (fingerprint → ms). */
  readonly trustedSince = new Map<string, number>();
  /** Each write as `secret` or `bundle`, in order. */
  readonly writes: string[] = [];
  /** The next this many writes fail with 409 (another writer got there first). */
  conflicts = 0;
  /**
   * The CA (PEM) that Pods of an install we take over serve under while they run (upstream's);
   * undefined once they are gone. Counted by {@link callsSucceed}.
   */
  foreignCaPem: string | undefined;
  /** How often the Pods behind the Service were looked at. */
  serverLooks = 0;
  private rv = 1;

  /** `kcpCa`: the KCP's CA that signs now (a test rotates it by assigning another). */
  constructor(
    public kcpCa: CertificateAuthority,
    readonly policy: ServingPolicy = KCP_SERVING_POLICY,
  ) {}

  settings(): ServingSettings {
    return {
      policy: this.policy,
      dnsNames: DNS,
      ipAddresses: [],
      caPem: () => this.kcpCa.certPem,
      now: () => this.now,
    };
  }

  view(): ServingView {
    return { secret: clone(this.secret), mutating: clone(this.mutating), validating: clone(this.validating) };
  }

  /** Writes the Secret; resolves with it as stored (the API server's answer). */
  async writeSecret(current: V1Secret | undefined, write: SecretWrite): Promise<V1Secret> {
    const next = await executeSecretWrite(readServingSecret(current), write, {
      now: this.now,
      dnsNames: DNS,
      externalCa: this.kcpCa,
    });
    if (this.conflicts > 0 || current?.metadata?.resourceVersion !== this.secret?.metadata?.resourceVersion) {
      this.conflicts = Math.max(0, this.conflicts - 1);
      throw conflict('the Secret');
    }
    const body = servingSecretBody(REF, current, next);
    const stored: V1Secret = { ...body, metadata: { ...body.metadata, resourceVersion: String(++this.rv) } };
    this.secret = stored;
    this.writes.push('secret');
    return clone(stored);
  }

  /** Writes the caBundles `view` lacks; resolves with `view` as the answers left it. */
  writeBundle(view: ServingView, bundlePem: string): Promise<ServingView> {
    const configs = [[MUTATING, view.mutating] as const, [VALIDATING, view.validating] as const];
    let answered = view;
    for (const [kind, seen] of lackingBundle(configs, bundlePem)) {
      const live = kind === MUTATING ? this.mutating : this.validating;
      if (this.conflicts > 0 || live?.metadata?.resourceVersion !== seen.metadata?.resourceVersion) {
        this.conflicts = Math.max(0, this.conflicts - 1);
        return Promise.reject(conflict(kind.kind));
      }
      const caBundle = Buffer.from(bundlePem).toString('base64');
      const written: WebhookConfiguration = {
        ...seen,
        metadata: { ...seen.metadata, resourceVersion: String(++this.rv) },
        webhooks: (seen.webhooks ?? []).map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle } })),
      };
      if (kind === MUTATING) {
        this.mutating = written;
        answered = { ...answered, mutating: clone(written) };
      } else {
        this.validating = written;
        answered = { ...answered, validating: clone(written) };
      }
      this.writes.push('bundle');
    }
    this.recordTrust();
    return Promise.resolve(answered);
  }

  /**
   * The registration apply: creates a configuration (without caBundle), keeps an existing one's
   * caBundle; answers with the configurations applied, as held now.
   */
  register(objects: readonly KubernetesObject[]): RegistrationAnswers {
    for (const o of objects) {
      const config = clone(o) as WebhookConfiguration;
      const live = o.kind === MUTATING.kind ? this.mutating : this.validating;
      if (live) continue;
      const created = { ...config, metadata: { ...config.metadata, resourceVersion: String(++this.rv) } };
      if (o.kind === MUTATING.kind) this.mutating = created;
      else this.validating = created;
    }
    this.recordTrust();
    const applied = (k: typeof MUTATING): boolean => objects.some((o) => o.kind === k.kind);
    return {
      mutating: applied(MUTATING) ? clone(this.mutating) : undefined,
      validating: applied(VALIDATING) ? clone(this.validating) : undefined,
    };
  }

  /** Every caBundle entry of both configurations. */
  bundles(): string[] {
    return [...caBundlesOf(this.mutating), ...caBundlesOf(this.validating)];
  }

  /**
   * Whether the API server may call the webhook now: nobody registers it, or the Secret's
   * certificate was signed by a CA every entry has held for the settle time; and while Pods of
   * an install we take over run, every entry holds their CA.
   */
  callsSucceed(): boolean {
    if (this.bundles().length === 0) return true;
    const foreign = parseCertificates(this.foreignCaPem).certificates[0];
    if (foreign && !this.bundles().every((b) => fingerprintsOf(b).includes(foreign.fingerprint)))
      return false;
    const leaf = parseCertificates(readServingSecret(this.secret)?.tlsCrt).certificates[0];
    // Before ours serve, the other install's Pods answer alone.
    if (!leaf) return foreign !== undefined;
    return [...this.trustedSince].some(([fp, since]) => {
      const ca = parseCertificates(this.bundles()[0]).certificates.find((c) => c.fingerprint === fp);
      return ca !== undefined && issuedBy(leaf, ca) && this.now - since >= this.policy.settleMs;
    });
  }

  /** What the KCP's look at the Pods behind the Service answers. */
  foreignServers(): Promise<boolean> {
    this.serverLooks++;
    return Promise.resolve(this.foreignCaPem !== undefined);
  }

  private recordTrust(): void {
    const sets = this.bundles().map(
      (b) => new Set(parseCertificates(b).certificates.map((c) => c.fingerprint)),
    );
    const all = new Set(sets.flatMap((s) => [...s]));
    for (const fp of all)
      if (sets.every((s) => s.has(fp)) && !this.trustedSince.has(fp)) this.trustedSince.set(fp, this.now);
    for (const fp of [...this.trustedSince.keys()])
      if (!sets.every((s) => s.has(fp))) this.trustedSince.delete(fp);
  }
}
