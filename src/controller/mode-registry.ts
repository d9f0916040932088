/**
 * The modes this build can run, by the name the CLI's `--mode` takes, and the lookup that
 * refuses a name the build lacks before anything starts.
 */
import { startAnnotateMode } from './annotate/annotate-mode.js';
import type { ModeStarter } from './mode.js';

/**
 * The modes this build runs from the common settings alone. Direct mode is not listed: the
 * controller command builds it from its own flags (src/cli/commands/controller-action.ts).
 */
export const modes: Readonly<Record<string, ModeStarter | undefined>> = {
  annotate: startAnnotateMode,
};

/** The requested mode does not exist in this build. */
export class ModeUnavailableError extends Error {
  override readonly name = 'ModeUnavailableError';
}

/** The starter of mode `name`; throws {@link ModeUnavailableError} if this build has none. */
export function modeStarter(name: string): ModeStarter {
  const starter = modes[name];
  if (starter === undefined) {
    throw new ModeUnavailableError(
      `mode "${name}" is not available in this build (available: ${Object.keys(modes).join(', ')})`,
    );
  }
  return starter;
}
