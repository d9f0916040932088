import { ControlPlaneError } from './errors.js';

/**
 * Polls `fn` every `intervalMs` until it returns a value other than undefined; an error thrown by
 * `fn` counts as "not yet" and becomes the cause of the {@link ControlPlaneError} when the time is up.
 */
export async function eventually<T>(
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 15_000,
  what = 'condition',
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new ControlPlaneError(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
}
