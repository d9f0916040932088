/**
 * Probes a plan's images with bounded concurrency under one time budget: what the budget cuts
 * off (in flight or not started) is not checked, and is counted as such rather than guessed.
 */
import type { PlannedImage } from './preflight-plan.js';
import { ProbeAbortedError, type ProbeOutcome } from './registry-probe.js';

/** Probes in flight at once, by default. */
export const DEFAULT_PREFLIGHT_CONCURRENCY = 8;
/** The whole check's time, by default. */
export const DEFAULT_PREFLIGHT_BUDGET_MS = 60_000;

/** One probed image. */
export interface CheckedImage extends PlannedImage {
  readonly outcome: ProbeOutcome;
}

/** What probes an image (a RegistryProbe fits). */
export interface ImageProber {
  probe(image: string, signal?: AbortSignal): Promise<ProbeOutcome>;
}

/** Options of {@link checkImages}. */
export interface CheckImagesOptions {
  readonly concurrency?: number | undefined;
  readonly budgetMs?: number | undefined;
  /** Ends the check early (the leader stepped down, a newer candidate came); the rest is not checked. */
  readonly signal?: AbortSignal | undefined;
}

/** What a check found. */
export interface CheckImagesResult {
  /** In plan order. */
  readonly checked: readonly CheckedImage[];
  /** Images the budget or the signal left unchecked. */
  readonly notChecked: number;
  /** Whether the budget ran out. */
  readonly outOfTime: boolean;
}

/**
 * Probes every image (each target once), at most `concurrency` at a time, until done or until
 * `budgetMs` has passed or `signal` aborts.
 */
export async function checkImages(
  images: readonly PlannedImage[],
  prober: ImageProber,
  o: CheckImagesOptions = {},
): Promise<CheckImagesResult> {
  const budget = AbortSignal.timeout(Math.max(0, o.budgetMs ?? DEFAULT_PREFLIGHT_BUDGET_MS));
  const signal = o.signal ? AbortSignal.any([o.signal, budget]) : budget;
  const results: (CheckedImage | undefined)[] = new Array<CheckedImage | undefined>(images.length);
  let next = 0;
  // A call, not a property read: the compiler would take `aborted` as unchanged across awaits.
  const stopped = (): boolean => signal.aborted;

  const worker = async (): Promise<void> => {
    while (!stopped()) {
      const index = next++;
      const planned = images[index];
      if (planned === undefined) return;
      try {
        results[index] = { ...planned, outcome: await prober.probe(planned.target, signal) };
      } catch (error) {
        if (error instanceof ProbeAbortedError || stopped()) return;
        throw error;
      }
    }
  };
  const workers = Math.max(1, Math.min(o.concurrency ?? DEFAULT_PREFLIGHT_CONCURRENCY, images.length));
  await Promise.all(Array.from({ length: workers }, worker));
  const checked = results.filter((r): r is CheckedImage => r !== undefined);
  return { checked, notChecked: images.length - checked.length, outOfTime: budget.aborted };
}
