/**
 * What the follower's Pod cache holds of a Pod: its key, its uid and the facts the classifier
 * drew from it (./pod-health.ts), never the Pod itself (its spec, status and managed fields are
 * most of its size), so following every Pod we changed stays cheap. Built by the reflector's
 * transform as each Pod arrives.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { failuresOf, podFactsOf, type PodFacts, type PodHealthSettings } from './pod-health.js';
import type { RevisionRulesLookup } from './revision-rules.js';
import type { PodObservation } from './revision-tally.js';

/**
 * A Pod as the follower caches it: a V1Pod with only its identity left (every V1Pod field is
 * optional, so the reflector's transform can keep the Pod type), plus the facts.
 */
export type FollowedPod = V1Pod & {
  /** The Pod's creationTimestamp as the API server sent it (RFC 3339). */
  readonly createdAt?: string;
  /** Absent when the Pod lost our revision label's value. */
  readonly facts?: PodFacts;
};

/** A Secret as the follower caches it: whether one of its name exists in a namespace, no data. */
export interface SecretPresence {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/**
 * Shares equal strings (namespaces, revisions) between cached Pods: thousands of Pods have a
 * handful of each. Bounded, past which strings are no longer shared (still correct).
 */
export class StringPool {
  private readonly pool = new Map<string, string>();

  constructor(private readonly max = 10_000) {}

  intern(s: string): string;
  intern(s: string | undefined): string | undefined;
  intern(s: string | undefined): string | undefined {
    if (s === undefined) return undefined;
    const known = this.pool.get(s);
    if (known !== undefined) return known;
    if (this.pool.size < this.max) this.pool.set(s, s);
    return s;
  }
}

/**
 * The cached form of `pod` under `settings`, its stamp checked against the rules of the revision it
 * names (the Pod reflector's transform; pure but for the pool).
 */
export function followedPodOf(
  pod: V1Pod,
  settings: PodHealthSettings,
  pool: StringPool,
  rules: RevisionRulesLookup,
): FollowedPod {
  const m = pod.metadata ?? {};
  const created: unknown = m.creationTimestamp;
  const createdAt =
    typeof created === 'string' ? created : created instanceof Date ? created.toISOString() : undefined;
  const facts = podFactsOf(pod, settings, rules);
  return {
    metadata: {
      name: m.name,
      namespace: pool.intern(m.namespace),
      uid: m.uid,
      resourceVersion: m.resourceVersion,
    },
    createdAt,
    facts:
      facts === undefined
        ? undefined
        : { ...facts, revision: pool.intern(facts.revision), ran: facts.ran?.map((k) => pool.intern(k)) },
  };
}

/** The Secret's identity alone (the Secret reflector's transform): its data never stays in memory. */
export function secretPresenceOf(secret: SecretPresence): SecretPresence {
  const m = secret.metadata ?? {};
  return {
    metadata: { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion },
  };
}

/** What the tally is told of a cached Pod; undefined without a uid or facts. */
export function observationOf(pod: FollowedPod, pullSecretExists: boolean): PodObservation | undefined {
  const uid = pod.metadata?.uid;
  const facts = pod.facts;
  if (uid === undefined || facts === undefined) return undefined;
  return {
    uid,
    pod: `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`,
    revision: facts.revision,
    createdAt: pod.createdAt,
    started: facts.started,
    failures: failuresOf(facts, pullSecretExists),
    ran: facts.ran ?? [],
  };
}
