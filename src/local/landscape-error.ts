/** The local landscape could not be set up or did not behave as it shows. */
export class LandscapeError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LandscapeError';
  }
}
