/**
 * Who the KCP is on a runtime: the user the runtime's API server authenticates the KCP's
 * kubeconfig as, learnt with a SelfSubjectReview (`authentication.k8s.io/v1`, GA since 1.28). The
 * drift registration skips that user's writes (../../render/webhook-registration.ts), a name no
 * other client on the runtime can give itself, unlike a field manager.
 */
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { SKIP_USERNAME_MAX_CHARS } from '../../render/webhook-registration.js';

const REVIEW_PATH = '/apis/authentication.k8s.io/v1/selfsubjectreviews';

interface SelfSubjectReview {
  readonly status?: { readonly userInfo?: { readonly username?: unknown } };
}

/**
 * The user a runtime's client is, per client: a client is made again when its kubeconfig changes
 * (a rotation may change the user), and one dropped takes its answer with it (a WeakMap). A failed
 * review is not kept: the next pass asks again.
 */
export class RuntimeIdentities {
  private readonly known = new WeakMap<ClusterAccess, Promise<string | undefined>>();

  /**
   * The user `access` is on its runtime; undefined when the review fails or names no usable user
   * (then no write is skipped: every write is reported, which costs a repair, never a miss).
   */
  usernameOf(access: ClusterAccess, timeoutMs?: number): Promise<string | undefined> {
    const known = this.known.get(access);
    if (known) return known;
    const learning = learnUsername(access, timeoutMs).then(
      (name) => {
        if (name === undefined) this.known.delete(access);
        return name;
      },
      () => {
        this.known.delete(access);
        return undefined;
      },
    );
    this.known.set(access, learning);
    return learning;
  }
}

/** One SelfSubjectReview; the user name if it is one a condition can carry. */
async function learnUsername(access: ClusterAccess, timeoutMs?: number): Promise<string | undefined> {
  const review = await kubeRequest<SelfSubjectReview | undefined>(access, {
    method: 'POST',
    path: REVIEW_PATH,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    timeoutMs,
  });
  const name = review?.status?.userInfo?.username;
  return typeof name === 'string' && name.length > 0 && name.length <= SKIP_USERNAME_MAX_CHARS
    ? name
    : undefined;
}
