/** The message of `error` on one line: what a person reads first, e.g. the reason a process exits. */
export function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // Each run of white space that holds a line break becomes one space; a run is matched once as a
  // whole (`\s*\n\s*` would rescan a long run from each of its characters).
  return message.replace(/\s+/g, (space) => (space.includes('\n') ? ' ' : space)).trim();
}
