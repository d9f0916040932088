/** Waiting on the API server until a call is refused with a given HTTP status. */
import { eventually } from '../../src/envtest/eventually.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';

/**
 * Waits until `call` fails with HTTP status `code` (an object gone, a policy enforced), calling it
 * again while it succeeds or fails otherwise; throws naming `what` after `timeoutMs`.
 */
export async function eventuallyFailsWith(
  call: () => Promise<unknown>,
  code: number,
  timeoutMs: number,
  what: string,
): Promise<void> {
  await eventually(
    () =>
      call().then(
        () => undefined,
        (error: unknown) => (statusCodeOf(error) === code ? true : undefined),
      ),
    timeoutMs,
    what,
  );
}
