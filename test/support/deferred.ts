/** A promise a test settles by hand: a step of the code under test waits on it until told. */

/** A pending promise with its resolve and reject. */
export interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

/** A new pending promise, settled only by its `resolve` or `reject`. */
export function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
