import type { Command } from 'commander';
import { ControlPlane } from '../../envtest/control-plane.js';

/** Options of `rtb local`. */
interface LocalOptions {
  clusters: string;
  once?: boolean;
}

/**
 * `rtb local`: the local landscape on the embedded default. Starts real clusters, prints
 * how to reach them, and stops everything cleanly on Ctrl-C (SIGINT) or SIGTERM.
 */
export function registerLocalCommand(program: Command): void {
  program
    .command('local')
    .description('run the local landscape: real kube-apiservers on loopback (Ctrl-C stops it)')
    .option('--clusters <names>', 'comma-separated cluster names', 'kcp')
    .option('--once', 'stop as soon as everything is up (for scripts and smoke tests)')
    .action(async (opts: LocalOptions) => {
      const names = opts.clusters.split(',').map((n) => n.trim()).filter(Boolean);
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
        const started = Date.now();
        const plane = await ControlPlane.start({
          clusters: names,
          log: (line) => {
            say(`· ${line}`);
          },
        });
        const b = plane.binaries;
        say(`kube-apiserver ${b.kubernetesVersion}, etcd ${b.etcdVersion} (${b.source})`);
        for (const c of plane.clusters) say(`cluster ${c.name}: ${c.server}\n  kubeconfig: ${c.kubeconfigPath}`);
        const first = plane.clusters[0]?.kubeconfigPath ?? '';
        say(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s. Try: ${b.kubectl ?? 'kubectl'} --kubeconfig ${first} get ns`);
        if (opts.once) requestStop('--once');
        else say('Press Ctrl-C to stop.');
        await stopRequested;
        say(`\n${reason ?? 'stop'}: stopping the local landscape…`);
        await plane.stop();
        say('stopped.');
      } finally {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
      }
    });
}
