import type { Command } from 'commander';
import type { RolloutCommand, RolloutFlags } from './rollout-action.js';

const VERBS: readonly { name: RolloutCommand; description: string }[] = [
  { name: 'approve', description: 'let the wave that waits for an approval start' },
  { name: 'reject', description: 'halt the rollout of the target and roll the runtimes that have it back' },
  { name: 'pause', description: 'start no further wave (the waves under way go on) until a resume' },
  { name: 'resume', description: 'end a pause, lift a rejection, and start a halted wave again' },
];

/**
 * `rtb rollout approve|reject|pause|resume POLICY`: a person's decision on a rollout, written as a
 * RolloutDecision on the KCP (docs/rollout.md, approvals); the controller acts on it.
 */
export function registerRolloutCommand(program: Command): void {
  const rollout = program.command('rollout').description("decide on a RolloutPolicy's rollout (direct mode)");
  for (const verb of VERBS) {
    const command = rollout
      .command(`${verb.name} <policy>`)
      .description(verb.description)
      .option('--kubeconfig <file>', 'kubeconfig of the KCP (default: in-cluster, or $KUBECONFIG)')
      .option('--reason <text>', 'why (recorded with the decision)');
    if (verb.name === 'approve')
      command.option('--wave <name>', 'the wave approved (default: the one that waits; a later one ahead)');
    command.action(async (policy: string, flags: RolloutFlags) => {
      const { runRollout } = await import('./rollout-action.js');
      process.stdout.write(`${await runRollout(verb.name, policy, flags)}\n`);
    });
  }
}
