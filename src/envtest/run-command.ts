import { spawn } from 'node:child_process';
import { ControlPlaneError } from './errors.js';

/** How to run one build step. */
export interface RunCommandOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Said when the program is not installed (ENOENT): how to get it. */
  readonly missingHint?: string;
  /** Show the program's stdout (progress) instead of capturing it. */
  readonly showStdout?: boolean;
  /** Also show stderr as it comes (it is kept for the error either way). */
  readonly showStderr?: boolean;
}

/**
 * Runs a program to completion (a build step: go, the image script, gcc); the last 8000
 * characters of its stderr go into the error when it fails. Resolves with stdout unless shown.
 */
export function runCommand(
  program: string,
  args: readonly string[],
  options: RunCommandOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', options.showStdout ? 'inherit' : 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      if (options.showStderr) process.stderr.write(chunk);
      stderr = (stderr + chunk.toString()).slice(-8000);
    });
    child.on('error', (cause: NodeJS.ErrnoException) => {
      const hint = cause.code === 'ENOENT' && options.missingHint ? `: ${options.missingHint}` : '';
      reject(new ControlPlaneError(`cannot run ${program}${hint} (${cause.message})`, { cause }));
    });
    child.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else
        reject(
          new ControlPlaneError(`${program} ${args.join(' ')} failed (exit ${code ?? 'signal'}):\n${stderr}`),
        );
    });
  });
}
