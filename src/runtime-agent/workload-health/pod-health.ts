/**
 * What a Pod we changed says about its revision (DESIGN §11), pure: whether all its containers
 * started, and which of its failures the change can have caused. Only failures we can tell apart
 * from the application's own are counted: a pull of an image we rewrote by a Pod that carries our
 * pull Secret, our pull Secret missing where the Pod references it, a container that cannot be
 * created or started because of our mount. An image we did not rewrite, a crash loop of a
 * container that started, anything else: not ours.
 *
 * What a Pod's creator shapes does not speak for the change (DESIGN §14): a Pod that opted out of
 * our pull Secret still gets the mirror, where a pull without our credentials may fail by its own
 * choice; a kubelet message quotes names the creator picked.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
  type WorkloadFailureKind,
} from '../../api/workload-health.js';
import type { ClusterTrustBundleConfig } from '../../api/trust-bundle-config.js';
import { parseImageReference } from '../../image/image-reference.js';
import {
  clusterTrustBundleMount,
  clusterTrustBundleVolume,
  jsonEqual,
} from '../../mutation/add-cluster-trust-bundle.js';
import { parseOriginals } from '../../mutation/stamp-revision.js';
import { originalKey } from './original-key.js';
import { MAX_MESSAGE_LENGTH, SCAN_FACTOR, redactMessage } from './redact-message.js';
import type { RevisionRulesLookup } from './revision-rules.js';

/** One failure of one container that the change can have caused. */
export interface WorkloadFailure {
  readonly kind: WorkloadFailureKind;
  readonly container: string;
  /** The key (./original-key.ts) of the image the container asked for, before our rewrite. */
  readonly original?: string;
  /** The image the Pod runs (after our rewrite). */
  readonly image?: string;
  /** Registry host of `image`, when it parses. */
  readonly registry?: string;
  /** The kubelet's reason, or `PullSecretMissing`. */
  readonly reason: string;
  /** The kubelet's message, redacted and cut short. */
  readonly message?: string;
}

/** The trust-bundle settings the mutation builds its volume and mount from. */
export type TrustBundleSettings = Pick<
  ClusterTrustBundleConfig,
  'name' | 'certWritePath' | 'volumeName' | 'volumeMountPath'
>;

/** What the classifier needs from the configuration in force. */
export interface PodHealthSettings {
  /** Name of our pull Secret (the config's `imagePullSecret.name`). */
  readonly pullSecretName: string;
  /** The config's trust bundle; absent when it mounts none (then no failure is a mount's). */
  readonly trustBundle?: TrustBundleSettings;
}

/**
 * What a Pod says whatever the state of our pull Secret: what the follower keeps of a Pod (a few
 * fields; the Pod itself is dropped). {@link failuresOf} adds the Secret's part.
 */
export interface PodFacts {
  readonly revision: string;
  /** Every container (init containers included) started or ran at least once. */
  readonly started: boolean;
  /** Failures of kinds `image-pull` and `mount`. */
  readonly failures: readonly WorkloadFailure[];
  /**
   * Containers waiting on a pull error while the Pod lists our pull Secret: `pull-secret-missing`
   * failures if the Secret does not exist in the Pod's namespace. Absent when there are none.
   */
  readonly pullWaits?: readonly WorkloadFailure[];
  /** Keys of the original images of the containers that started (ran under this revision). */
  readonly ran?: readonly string[];
}

/** A Pod's health under its revision. */
export interface PodHealth {
  readonly revision: string;
  readonly started: boolean;
  readonly failures: readonly WorkloadFailure[];
}

/** Reason of a `pull-secret-missing` failure (ours: the kubelet says only that the pull failed). */
export const PULL_SECRET_MISSING_REASON = 'PullSecretMissing';

const IMAGE_PULL_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName']);
// A missing Secret makes pulls fail; an invalid name is not about credentials.
const SECRET_PULL_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff']);
/** How much of a kubelet message is searched for our volume's directory (as redaction reads). */
const MOUNT_SCAN_LENGTH = MAX_MESSAGE_LENGTH * SCAN_FACTOR;
// Characters that continue a volume name (a DNS label) in a path: a longer name is another volume.
const VOLUME_NAME_CHAR = /[a-z0-9._-]/i;
const MOUNT_REASONS = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);
// Terminated reasons of a container the runtime never got running.
const NEVER_RAN_REASONS = new Set(['StartError', 'ContainerCannotRun']);
const NO_FAILURES: readonly WorkloadFailure[] = Object.freeze([]);

// The report's limits (../../api/workload-health.ts).
const MAX_CONTAINER = 253;
const MAX_IMAGE = 1024;
const MAX_REGISTRY = 512;
const MAX_REASON = 128;

/** The revision a Pod was changed under (label, else annotation); undefined when not ours. */
export function revisionOf(pod: V1Pod): string | undefined {
  const m = pod.metadata;
  const value = m?.labels?.[REVISION_LABEL] ?? m?.annotations?.[REVISION_ANNOTATION];
  return value === undefined || value === '' ? undefined : value;
}

/** Names of the containers whose image we rewrote (a malformed annotation names none). */
export function rewrittenContainers(pod: V1Pod): ReadonlySet<string> {
  const text = pod.metadata?.annotations?.[ORIGINAL_IMAGES_ANNOTATION];
  if (text === undefined) return new Set();
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return new Set();
    return new Set(Object.keys(parsed));
  } catch {
    return new Set();
  }
}

/** Whether a container is running, or ran, or the kubelet says it started. */
export function containerStarted(status: V1ContainerStatus | undefined): boolean {
  if (status === undefined) return false;
  if (status.started === true || status.state?.running !== undefined) return true;
  if (status.lastState?.running !== undefined) return true;
  return ran(status.state?.terminated) || ran(status.lastState?.terminated);
}

function ran(t: { reason?: string; startedAt?: unknown } | undefined): boolean {
  if (t === undefined || (t.reason !== undefined && NEVER_RAN_REASONS.has(t.reason))) return false;
  // The runtime reports the zero time for a container it never started.
  const at = t.startedAt === undefined ? Number.NaN : new Date(t.startedAt as string | Date).getTime();
  return Number.isFinite(at) && at > 0;
}

/**
 * The facts of a Pod under `settings`; undefined for a Pod without our revision (pure).
 *
 * The Pod's revision stamp is checked against the set it names (DESIGN §14): under a revision
 * whose rules `rules` does not know, no failure and no image that ran is counted; a container the
 * stamp says we rewrote counts only if its image is what that revision's overrides make of the
 * original named (else its creator, not our admission, wrote that). A container we did not rewrite
 * asked for the image it runs.
 */
export function podFactsOf(
  pod: V1Pod,
  settings: PodHealthSettings,
  rules: RevisionRulesLookup,
): PodFacts | undefined {
  const revision = revisionOf(pod);
  if (revision === undefined) return undefined;
  const rewrite = rules(revision);
  const spec = pod.spec;
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const byName = new Map(statuses.map((s) => [s.name, s]));
  const names = spec
    ? [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.name)
    : statuses.map((s) => s.name);
  const started = names.length > 0 && names.every((n) => containerStarted(byName.get(n)));
  const images = new Map<string, string>();
  for (const c of [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])])
    if (c.image !== undefined) images.set(c.name, c.image);
  const originals = parseOriginals(pod.metadata?.annotations?.[ORIGINAL_IMAGES_ANNOTATION]);
  const rewritten = new Set(Object.keys(originals));
  // The original a container asked for, if its stamp holds under the revision's rules.
  const imageOf = (name: string): string | undefined => {
    const status = byName.get(name)?.image;
    return images.get(name) ?? (status === '' ? undefined : status);
  };
  const originalOf = (name: string): string | undefined => {
    if (rewrite === undefined) return undefined;
    const image = imageOf(name);
    const original = Object.hasOwn(originals, name) ? originals[name] : undefined;
    if (original === undefined) return image;
    let to: string | undefined;
    try {
      to = rewrite(original);
    } catch {
      to = undefined;
    }
    return to !== undefined && to === image ? original : undefined;
  };
  const usesSecret = (spec?.imagePullSecrets ?? []).some((r) => r.name === settings.pullSecretName);
  const failures: WorkloadFailure[] = [];
  const pullWaits: WorkloadFailure[] = [];
  const ran = new Set<string>();
  for (const name of names) {
    const original = containerStarted(byName.get(name)) ? originalOf(name) : undefined;
    if (original !== undefined) ran.add(originalKey(original));
  }
  for (const s of statuses) {
    const reason = s.state?.waiting?.reason;
    if (reason === undefined) continue;
    const original = originalOf(s.name);
    // Unknown revision, or a stamp its set would not have made: nothing of this container counts.
    if (original === undefined) continue;
    const message = s.state?.waiting?.message ?? '';
    const image = imageOf(s.name);
    const failure = (kind: WorkloadFailureKind): WorkloadFailure => ({
      ...describe(kind, s.name, image, reason, message),
      original: originalKey(original),
    });
    // A pull our credentials take part in counts only where the Pod carries them: one that opted
    // out of our Secret pulls the mirror without them. An invalid name is the rewrite's alone.
    if (
      IMAGE_PULL_REASONS.has(reason) &&
      rewritten.has(s.name) &&
      (usesSecret || !SECRET_PULL_REASONS.has(reason))
    )
      failures.push(failure('image-pull'));
    if (SECRET_PULL_REASONS.has(reason) && usesSecret) pullWaits.push(failure('pull-secret-missing'));
    if (MOUNT_REASONS.has(reason) && failsOnOurMount(pod, s.name, message, settings.trustBundle))
      failures.push(failure('mount'));
  }
  return {
    revision,
    started,
    failures: failures.length > 0 ? failures : NO_FAILURES,
    pullWaits: pullWaits.length > 0 ? pullWaits : undefined,
    ran: ran.size > 0 ? [...ran] : undefined,
  };
}

/**
 * Whether container `name` fails on our mount. Names in a message are the creator's to pick (a
 * ConfigMap, a container, a command), so a message counts only where everything it could be
 * about is ours: the Pod carries exactly the volume the mutation adds, the container mounts it
 * exactly as the mutation does and nowhere else, and the message names the volume's directory on
 * the node, which holds the Pod's uid (the runtime's mount error quotes it as its source). The
 * creator cannot spell that uid in what is fixed before the Pod exists; what a container's
 * command or args expand (`$(VAR)`, from env a ConfigMap or annotation fills later) could, so
 * such a container counts no mount failure.
 */
function failsOnOurMount(
  pod: V1Pod,
  name: string,
  message: string,
  trust: TrustBundleSettings | undefined,
): boolean {
  const uid = pod.metadata?.uid;
  if (trust === undefined || uid === undefined || uid === '') return false;
  const spec = pod.spec;
  const container = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].find(
    (c) => c.name === name,
  );
  if (container === undefined) return false;
  const volumes = (spec?.volumes ?? []).filter((v) => v.name === trust.volumeName);
  if (volumes.length !== 1 || !jsonEqual(volumes[0], clusterTrustBundleVolume(trust))) return false;
  const mounts = (container.volumeMounts ?? []).filter((m) => m.name === trust.volumeName);
  if (mounts.length !== 1 || !jsonEqual(mounts[0], clusterTrustBundleMount(trust))) return false;
  const words = [...(container.command ?? []), ...(container.args ?? [])];
  if (words.some((w) => w.includes('$('))) return false;
  return namesDirectory(
    message.slice(0, MOUNT_SCAN_LENGTH),
    `/pods/${uid}/volumes/kubernetes.io~projected/${trust.volumeName}`,
  );
}

/** Whether `text` holds `dir` as a whole path segment (not the head of a longer name). */
function namesDirectory(text: string, dir: string): boolean {
  for (let at = text.indexOf(dir); at !== -1; at = text.indexOf(dir, at + 1))
    if (!VOLUME_NAME_CHAR.test(text[at + dir.length] ?? '')) return true;
  return false;
}

function describe(
  kind: WorkloadFailureKind,
  container: string,
  image: string | undefined,
  reason: string,
  message: string,
): WorkloadFailure {
  const registry = image === undefined ? undefined : registryOf(image);
  const text = redactMessage(message);
  return {
    kind,
    container: container.slice(0, MAX_CONTAINER),
    image: image?.slice(0, MAX_IMAGE),
    registry: registry?.slice(0, MAX_REGISTRY),
    reason: (kind === 'pull-secret-missing' ? PULL_SECRET_MISSING_REASON : reason).slice(0, MAX_REASON),
    message: text !== '' ? text : undefined,
  };
}

function registryOf(image: string): string | undefined {
  try {
    return parseImageReference(image).registry;
  } catch {
    return undefined; // InvalidImageName: the image is reported, its registry is not known
  }
}

/**
 * The failures of a Pod with `facts` when our pull Secret does or does not exist in its
 * namespace (pure). A missing Secret is the likelier cause of a pull failure than the image: a
 * container waiting on a pull is then counted once, as `pull-secret-missing`.
 */
export function failuresOf(facts: PodFacts, pullSecretExists: boolean): readonly WorkloadFailure[] {
  const waits = facts.pullWaits;
  if (pullSecretExists || waits === undefined) return facts.failures;
  const waiting = new Set(waits.map((w) => w.container));
  const rest = facts.failures.filter((f) => !(f.kind === 'image-pull' && waiting.has(f.container)));
  return [...waits, ...rest];
}

/**
 * A Pod's health under its revision, given our pull Secret's name and whether it exists in the
 * Pod's namespace; undefined for a Pod without our revision (pure).
 */
export function classifyPod(
  pod: V1Pod,
  settings: PodHealthSettings & { readonly pullSecretExists: boolean },
  rules: RevisionRulesLookup,
): PodHealth | undefined {
  const facts = podFactsOf(pod, settings, rules);
  if (facts === undefined) return undefined;
  return {
    revision: facts.revision,
    started: facts.started,
    failures: failuresOf(facts, settings.pullSecretExists),
  };
}
