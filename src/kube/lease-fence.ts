/**
 * Fencing of writes by a Lease: work that started while this process held its Lease checks,
 * before each write, that it still holds it in the same term. A process that stalled (a long GC
 * pause, a partition from the API server) may find its Lease taken meanwhile; the check is
 * memory and clock only (the last renewal's time), so it costs nothing per write.
 */

/** True while the Lease is still held in the term the fence was made in. */
export type LeaseFence = () => boolean;

/** A fence for work that is not fenced (no sharding). */
export const UNFENCED: LeaseFence = () => true;

/** A write was not sent: the Lease it was fenced by is no longer held. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';

  constructor(
    /** The write refused (e.g. `apply`). */
    readonly refused: string,
  ) {
    super(`not written (${refused}): this replica's Lease is no longer held`);
  }
}

/** Throws {@link LeaseLostError} unless `fence` holds; `what` names the write refused. */
export function assertFenced(fence: LeaseFence, what: string): void {
  if (!fence()) throw new LeaseLostError(what);
}

/** The LeaseLostError `error` is or was caused by, if any. */
export function leaseLostIn(error: unknown): LeaseLostError | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof LeaseLostError) return e;
  return undefined;
}
