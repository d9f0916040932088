import { Option, type Command } from 'commander';

/** Options of `rtb local`. */
interface LocalOptions {
  runtimes: string;
  logLevel: string;
  once?: boolean;
  webhooks: 'auto' | 'node' | 'process';
}

/**
 * `rtb local`: the local landscape on the embedded default. Starts real clusters, prints
 * how to reach them, and stops everything cleanly on Ctrl-C (SIGINT) or SIGTERM.
 */
export function registerLocalCommand(program: Command): void {
  program
    .command('local')
    .description('run the local landscape: real clusters, the webhook, the seed example (Ctrl-C stops it)')
    .option('--runtimes <names>', 'comma-separated runtime cluster names', 'runtime-1,runtime-2')
    .option('--log-level <level>', 'log level of the in-process components (JSON on stderr)', 'warn')
    .option('--once', 'stop as soon as everything is up (for scripts and smoke tests)')
    .addOption(
      new Option(
        '--webhooks <where>',
        "where the runtimes' webhooks run: as Pods on a node per runtime (needs root and scripts/install-node-host.sh), in this process, or auto (a node when the host can run one)",
      )
        .choices(['auto', 'node', 'process'])
        .default('auto'),
    )
    .action(async (opts: LocalOptions) => {
      const names = opts.runtimes
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean);
      const say = (line: string): void => {
        process.stdout.write(`${line}\n`);
      };
      let reason: string | undefined;
      let wake: () => void = () => undefined;
      const stopRequested = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const requestStop = (why: string): void => {
        if (reason !== undefined) {
          // A second Ctrl-C while a cold build or a start is still running: leave now; the
          // harness's exit hook kills every child by PID.
          say(`\n${why} again: exiting at once.`);
          process.exit(130);
        }
        reason = why;
        wake();
      };
      // Installed before anything starts, so Ctrl-C during start-up also stops cleanly.
      const onInt = (): void => {
        requestStop('SIGINT');
      };
      const onTerm = (): void => {
        requestStop('SIGTERM');
      };
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
      try {
        // Imported here, after the signal handlers: only `rtb local` loads the landscape.
        const [{ startLandscape }, { createLogger }] = await Promise.all([
          import('../../local/landscape.js'),
          import('../../telemetry/logger.js'),
        ]);
        const landscape = await startLandscape({
          say,
          runtimes: names,
          webhooks: opts.webhooks,
          logger: createLogger({ name: 'local', level: opts.logLevel, destination: process.stderr }),
        });
        if (opts.once) requestStop('--once');
        else say('Press Ctrl-C to stop.');
        await stopRequested;
        say(`\n${reason ?? 'stop'}: stopping the local landscape…`);
        await landscape.stop();
        say('stopped.');
      } finally {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
      }
    });
}
