/** The runtime's API server could not be reached (no HTTP answer); says why. */
export class RuntimeUnreachableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RuntimeUnreachableError';
  }
}
