import { Option, type Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { PreviewInputError, PreviewOutput } from '../mutate-preview.js';

interface MutateFlags {
  file: string;
  config: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE';
  output: PreviewOutput;
  landscape?: string;
  registryCache: string[];
}

function readInput(path: string, what: string, InputError: typeof PreviewInputError): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (cause) {
    throw new InputError(
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
    .option('--landscape <landscape>', 'as rtb webhook --landscape: the value of KYMA_LANDSCAPE')
    .option(
      '--registry-cache <host>',
      "an upstream host with a customer's registry cache on the runtime (repeat for more); with the config's registryCaches: leave, its images are not rewritten",
      (host: string, all: string[]) => [...all, host],
      [] as string[],
    )
    .addOption(
      new Option('--operation <op>', 'admission operation').choices(['CREATE', 'UPDATE']).default('CREATE'),
    )
    .addOption(
      new Option('-o, --output <format>', 'output').choices(['yaml', 'json', 'patch']).default('yaml'),
    )
    .action(async (flags: MutateFlags) => {
      // The mutation code (and yaml) is imported only when the command runs.
      const preview = await import('../mutate-preview.js');
      const read = (path: string, what: string): string => readInput(path, what, preview.PreviewInputError);
      try {
        const out = preview.previewMutation({
          podText: read(flags.file, 'the Pod'),
          configText: read(flags.config, 'the config'),
          namespaceText: flags.namespace ? read(flags.namespace, 'the Namespace') : undefined,
          operation: flags.operation,
          output: flags.output,
          landscape: flags.landscape,
          registryCaches: flags.registryCache,
          onWarning: (message) => process.stderr.write(`rtb mutate: warning: ${message}\n`),
        });
        process.stdout.write(out);
      } catch (error) {
        if (!(error instanceof preview.PreviewInputError)) throw error;
        process.stderr.write(`rtb mutate: ${error.message.replace(/\s+/g, ' ')}\n`);
        process.exitCode = 2;
      }
    });
}
