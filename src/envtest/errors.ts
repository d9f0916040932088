/**
 * The local control plane or landscape could not be built, started or stopped, or did not reach
 * the state waited for in time (./eventually.ts).
 */
export class ControlPlaneError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ControlPlaneError';
  }
}
