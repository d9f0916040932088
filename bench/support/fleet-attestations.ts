// Runtimes attesting to the controller, for the periodic resync's cost (bench/fleet-scale.ts):
// each runtime's webhook POSTs the resourceVersions of the objects the KCP manages on it
// (docs/attestation.md). Runtimes here share a pool of API servers, so the objects that differ
// per runtime (the drift client Secret: a certificate per runtime) are overwritten by the next
// runtime on the same server; a watch on each server during a forced pass records the
// resourceVersion each runtime's own write left, which is what that runtime would read on a
// cluster of its own. Every other managed object is read once per pool server.
import { X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import {
  ATTESTATION_PATH,
  parseAttestationAnswer,
  refKey,
  type Attestation,
  type AttestationAnswer,
  type ManagedRef,
} from '../../src/api/attestation.js';
import { RUNTIME_NAMESPACE, WATCHER_TLS_SECRET } from '../../src/api/runtime-names.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { KubeApiError } from '../../src/kube/kube-errors.js';
import { kubeVersionReader } from '../../src/drift/managed-versions.js';
import { postJson } from '../../src/drift/post-json.js';
import { forEachLimited } from './limited.js';
import { ObjectWatch } from './object-watch.js';
import { RuntimeAgents, type RuntimeIdentities } from './runtime-identities.js';

/** What one attestation came back with. */
export interface AttestationResult {
  readonly status: number;
  readonly answer?: AttestationAnswer;
}

/** The drift client Secret's resourceVersion per runtime, from watches on every pool server. */
export class WatcherSecretVersions {
  private constructor(private readonly watches: readonly ObjectWatch<V1Secret>[]) {}

  /** Starts a watch on each server; start it before the writes it should see. */
  static async start(pool: readonly LocalCluster[]): Promise<WatcherSecretVersions> {
    const watches = pool.map(
      (server) =>
        new ObjectWatch<V1Secret>(
          server.kubeConfig(),
          `/api/v1/namespaces/${RUNTIME_NAMESPACE}/secrets`,
          WATCHER_TLS_SECRET,
        ),
    );
    await Promise.all(watches.map((w) => w.start()));
    return new WatcherSecretVersions(watches);
  }

  /** Runtime ID (the certificate's CN) → the resourceVersion its latest write left. */
  versions(): Map<string, string> {
    const byId = new Map<string, string>();
    for (const watch of this.watches)
      for (const { type, object } of watch.events) {
        const pem = object.data?.['tls.crt'];
        const rv = object.metadata?.resourceVersion;
        if (type === 'DELETED' || pem === undefined || rv === undefined) continue;
        const cn = /CN=([^\n,]+)/.exec(new X509Certificate(Buffer.from(pem, 'base64')).subject)?.[1];
        if (cn !== undefined) byId.set(cn, rv);
      }
    return byId;
  }

  stop(): void {
    for (const w of this.watches) w.stop();
  }
}

/**
 * Attestations as runtimes send them: each over a new TLS connection with the runtime's client
 * identity, resuming the TLS session of the runtime's previous attestation as a webhook replica's
 * agent does (the listener honours sessions for longer than the interval between attestations).
 */
export class FleetAttester {
  private readonly url: URL;
  private readonly agents: RuntimeAgents;

  constructor(identities: RuntimeIdentities, listenerPort: number) {
    this.url = new URL(`https://127.0.0.1:${listenerPort}${ATTESTATION_PATH}`);
    this.agents = new RuntimeAgents(identities, false);
  }

  /** POSTs `attestation` for `runtimeId`; the answer is parsed when the status is 200. */
  async send(runtimeId: string, attestation: Attestation): Promise<AttestationResult> {
    const agent = this.agents.of(runtimeId);
    const answer = await postJson(this.url, agent, JSON.stringify(attestation), 30_000, 256 * 1024).answer;
    return answer.status === 200
      ? { status: 200, answer: parseAttestationAnswer(answer.body) }
      : { status: answer.status };
  }

  close(): void {
    this.agents.close();
  }
}

/** The resourceVersion of each of `refs` on `server` ('' when absent), by {@link refKey}: as the attestor reads them. */
export async function readRefs(
  server: LocalCluster,
  refs: readonly ManagedRef[],
): Promise<Map<string, string>> {
  const read = kubeVersionReader(server.kubeConfig(), 30_000);
  const signal = new AbortController().signal;
  const versions = new Map<string, string>();
  await forEachLimited(refs, 4, async (ref) => {
    // Absent is a fact to attest (''); anything else means the benchmark is broken.
    const version = await read(ref, signal).catch((error: unknown) => {
      if (error instanceof KubeApiError && error.statusCode === 404) return '';
      throw new Error(`GET ${refKey(ref)} on ${server.name}`, { cause: error });
    });
    versions.set(refKey(ref), version);
  });
  return versions;
}

/**
 * A runtime's attestation of `check`: the pool server's versions, but the drift client Secret's
 * as the runtime's own write left it.
 */
export function attestationOf(
  check: readonly ManagedRef[],
  serverVersions: ReadonlyMap<string, string>,
  ownWatcherSecret: string | undefined,
): Attestation {
  return {
    objects: check.map((ref) => ({
      ...ref,
      resourceVersion:
        ref.kind === 'Secret' && ref.name === WATCHER_TLS_SECRET && ref.namespace === RUNTIME_NAMESPACE
          ? (ownWatcherSecret ?? '')
          : (serverVersions.get(refKey(ref)) ?? ''),
    })),
  };
}
