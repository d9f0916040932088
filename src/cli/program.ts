import { Command } from 'commander';
import { packageVersion } from '../version.js';
import { registerControlPlaneCommand } from './commands/control-plane.js';
import { registerControllerCommand } from './commands/controller.js';
import { registerLocalCommand } from './commands/local.js';
import { registerWebhookCommand } from './commands/webhook.js';
import { registerMutateCommand } from './commands/mutate.js';
import { registerRenderCommand } from './commands/render.js';
import { registerRolloutCommand } from './commands/rollout.js';
import { registerStatusCommand } from './commands/status.js';

/** Builds the `rtb` command tree. Each sub-command lives in its own file and registers itself here. */
export function buildProgram(): Command {
  const program = new Command('rtb')
    .description('rt-bootstrapper: landscape-specific Pod configuration for Kyma runtimes')
    .version(packageVersion(), '-v, --version', 'print the version of rtb')
    .showHelpAfterError()
    .enablePositionalOptions();
  registerLocalCommand(program);
  registerWebhookCommand(program);
  registerControllerCommand(program);
  registerMutateCommand(program);
  registerRenderCommand(program);
  registerStatusCommand(program);
  registerRolloutCommand(program);
  registerControlPlaneCommand(program);
  return program;
}
