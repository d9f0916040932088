/**
 * Turns a burst of triggers into one call: `fire` runs once the triggers have been quiet for
 * `windowMs`, but no later than `maxDelayMs` after the first trigger of the burst, so a source
 * that changes continuously still gets signalled.
 */

/** A debounce with a ceiling; see the file comment. */
export class Coalescer {
  private timer: NodeJS.Timeout | undefined;
  private firstAt = 0;

  constructor(
    private readonly fire: () => void,
    private readonly windowMs: number,
    private readonly maxDelayMs: number = windowMs * 5,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether a call is pending. */
  pending(): boolean {
    return this.timer !== undefined;
  }

  /** Notes one trigger. */
  trigger(): void {
    const now = this.now();
    if (this.timer === undefined) this.firstAt = now;
    else clearTimeout(this.timer);
    const due = Math.min(now + this.windowMs, this.firstAt + Math.max(this.windowMs, this.maxDelayMs));
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.fire();
      },
      Math.max(0, due - now),
    );
  }

  /** Drops a pending call. */
  cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
