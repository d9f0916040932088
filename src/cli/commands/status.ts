import { Option, type Command } from 'commander';
import { DEFAULT_ROLLOUT_POLICY_NAME } from '../../api/rollout-policy.js';
import type { StatusFlags } from './status-action.js';

/** `rtb status`: the fleet of direct mode, read from the KCP. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('print the fleet from the KCP: runtimes by state and version, the rollout, failing runtimes')
    .option('--kubeconfig <file>', 'kubeconfig of the KCP (default: in-cluster, or $KUBECONFIG)')
    .option('--namespace <namespace>', 'namespace of the RuntimeBootstrappers', 'kcp-system')
    .option('--rollout-policy <name>', 'the RolloutPolicy', DEFAULT_ROLLOUT_POLICY_NAME)
    .addOption(new Option('-o, --output <format>', 'output').choices(['text', 'json']).default('text'))
    .action(async (flags: StatusFlags) => {
      const { runStatus } = await import('./status-action.js');
      process.stdout.write(await runStatus(flags));
    });
}
