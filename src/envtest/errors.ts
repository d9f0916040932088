/** The local control plane could not be built, started or stopped. */
export class ControlPlaneError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ControlPlaneError';
  }
}
