/** `rtb webhook` as its own process, as the kubelet runs it: spawned from the sources with tsx. */
import { spawn, type ChildProcess } from 'node:child_process';

/** How a process ended. */
export interface ProcessEnd {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A spawned `rtb webhook`, with its output and its exit. */
export interface WebhookProcess {
  readonly child: ChildProcess;
  readonly port: number;
  output(): string;
  stderr(): string;
  /** How it ended, once it has; undefined while it runs. */
  ended(): ProcessEnd | undefined;
  /** Resolves with the exit code; kills it and rejects if it has not exited within `ms`. */
  exited(ms?: number): Promise<number | null>;
}

/** What `rtb webhook` is started with. */
export interface WebhookProcessOptions {
  readonly kubeconfigPath: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The port it serves on, at 127.0.0.1. */
  readonly port: number;
  /** Flags after the serving ones. */
  readonly extraArgs?: readonly string[];
  /** Its environment; this process's when absent. */
  readonly env?: NodeJS.ProcessEnv;
}

/** Spawns `rtb webhook` serving on 127.0.0.1 (run from the repository root, as npm test does). */
export function spawnWebhookProcess(o: WebhookProcessOptions): WebhookProcess {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'webhook',
      `--kubeconfig=${o.kubeconfigPath}`,
      `--tls-cert=${o.certFile}`,
      `--tls-key=${o.keyFile}`,
      '--host=127.0.0.1',
      `--port=${o.port}`,
      ...(o.extraArgs ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], ...(o.env ? { env: o.env } : {}) },
  );
  let out = '';
  let err = '';
  let end: ProcessEnd | undefined;
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exit = new Promise<number | null>((resolve) => {
    child.on('exit', (code, signal) => {
      end = { code, signal };
      resolve(code);
    });
  });
  return {
    child,
    port: o.port,
    output: () => out,
    stderr: () => err,
    ended: () => end,
    exited: (ms = 60_000) =>
      Promise.race([
        exit,
        new Promise<never>((_, reject) =>
          setTimeout(() => {
            child.kill('SIGKILL');
            reject(
              new Error(
                `rtb webhook did not exit within ${ms} ms; stderr: ${err}; stdout tail: ${out.slice(-2000)}`,
              ),
            );
          }, ms).unref(),
        ),
      ]),
  };
}
