import { Option, type Command } from 'commander';
import { readFileSync } from 'node:fs';
import { PreviewInputError, previewMutation, type PreviewOutput } from '../mutate-preview.js';

interface MutateFlags {
  file: string;
  config: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE';
  output: PreviewOutput;
}

function readInput(path: string, what: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (cause) {
    throw new PreviewInputError(
      `cannot read ${what} ${path}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`,
      { cause },
    );
  }
}

/** `rtb mutate`: offline preview of what the webhook does to a Pod, with the webhook's own code. */
export function registerMutateCommand(program: Command): void {
  program
    .command('mutate')
    .description('print a Pod as the webhook would mutate it (no cluster needed)')
    .requiredOption('-f, --file <pod.yaml|->', 'the Pod (YAML or JSON; - reads stdin)')
    .requiredOption('--config <config.json>', 'the webhook config (rt-bootstrapper-config.json)')
    .option('--namespace <namespace.yaml>', "the Pod's Namespace, for its annotations")
    .addOption(
      new Option('--operation <op>', 'admission operation').choices(['CREATE', 'UPDATE']).default('CREATE'),
    )
    .addOption(
      new Option('-o, --output <format>', 'output').choices(['yaml', 'json', 'patch']).default('yaml'),
    )
    .action((flags: MutateFlags) => {
      try {
        const out = previewMutation({
          podText: readInput(flags.file, 'the Pod'),
          configText: readInput(flags.config, 'the config'),
          ...(flags.namespace ? { namespaceText: readInput(flags.namespace, 'the Namespace') } : {}),
          operation: flags.operation,
          output: flags.output,
        });
        process.stdout.write(out);
      } catch (error) {
        if (!(error instanceof PreviewInputError)) throw error;
        process.stderr.write(`rtb mutate: ${error.message.replace(/\s+/g, ' ')}\n`);
        process.exitCode = 2;
      }
    });
}
