/**
 * Why a runtime's API server gave no usable answer: none at all (`Unreachable`), not all of it
 * within the deadline of a call (`DeadlineExceeded`), more than the cap on an answer
 * (`AnswerTooLarge`), or the controller stopping (`Stopping`); the reason condition
 * `RuntimeReachable` carries.
 */
export type RuntimeUnreachableReason = 'Unreachable' | 'DeadlineExceeded' | 'AnswerTooLarge' | 'Stopping';

/** The runtime's API server could not be reached, or gave no usable answer; says why. */
export class RuntimeUnreachableError extends Error {
  constructor(
    message: string,
    options?: ErrorOptions,
    readonly reason: RuntimeUnreachableReason = 'Unreachable',
  ) {
    super(message, options);
    this.name = 'RuntimeUnreachableError';
  }
}
