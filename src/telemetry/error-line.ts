/** The message of `error` on one line: what a person reads first, e.g. the reason a process exits. */
export function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\n\s*/g, ' ').trim();
}
