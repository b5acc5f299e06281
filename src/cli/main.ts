import { Command, CommanderError, Help, Option } from 'commander';
import { CliError, EXIT, EXIT_HELP } from './exit.js';
import { tokenCommand } from './token.js';
import { packageVersion } from '../version.js';

/**
 * The `vulndb` command: run the service, apply migrations, import reports, and the operator
 * commands. This file is the table of commands and their options only: each action lives in its
 * own module, imported when the command runs, so `vulndb --help` or `vulndb token` never loads
 * the service, BullMQ or the store.
 *
 * Exit codes (src/cli/exit.ts): 0 done, 1 reports rejected or failed (or the work failed),
 * 2 usage, input or configuration error (commander's own errors included).
 */

/** serve, migrate, import, backup, restore and token, in the order the help lists them. */
function addServiceCommands(program: Command): void {
  program
    .command('serve')
    .description('run the service: both APIs and the ingest worker (default), or one role in server mode')
    .argument('[role]', 'all (default), api or worker')
    .option('--demo', 'also enqueue a generated six-month history (only into an empty store)')
    .action(async (role, opts, command) => (await import('./serve.js')).serve(role, opts, command));

  program
    .command('migrate')
    .description('apply the SQL migrations of sql/ (also done at every start)')
    .action(async () => (await import('./migrate.js')).migrateCommand());

  addImportCommand(program);

  program
    .command('backup')
    .description(
      'write a verified snapshot of the store (embedded mode: to a new folder, asking the running service; server mode: to the server’s disk:<disk>/<name> or s3:<URL>)',
    )
    .argument('<destination>', 'embedded: a new or empty folder; server (CLICKHOUSE_URL): disk:<disk>/<name> or s3:https://…')
    .option('--admin-url <url>', 'the service’s admin listener (default: http://ADMIN_HOST:ADMIN_PORT)')
    .option('--json', 'print the manifest as JSON')
    .action(async (dir, opts) => (await import('./backup.js')).backupCommand(await (await import('./config.js')).cliConfig(), dir, opts));

  program
    .command('restore')
    .description('fill an empty store from a snapshot, then apply later migrations (stop the service first)')
    .argument('<source>', 'a folder written by vulndb backup (embedded) or its disk:<disk>/<name> or s3:<URL> (server)')
    .option('--json', 'print the summary as JSON')
    .action(async (dir, opts) => (await import('./backup.js')).restoreCommand(await (await import('./config.js')).cliConfig(), dir, opts));

  program.addCommand(tokenCommand().copyInheritedSettings(program));
}

/** vulndb import: files, directories or stdin, Vulcan reports or scanner documents. */
function addImportCommand(program: Command): void {
  program
    .command('import')
    .description(
      'validate and enqueue reports from JSON files, JSON arrays or JSON lines (files, directories, or - for stdin), or scanner documents with --format',
    )
    .argument('<inputs...>', 'files, directories or -')
    .addOption(
      new Option('--format <format>', 'vulcan: Vulcan check reports; sarif, trivy: one scanner document per file, converted to reports')
        .choices(['vulcan', 'sarif', 'trivy'])
        .default('vulcan'),
    )
    .option('--target <identifier>', "with --format: the target of the reports (default: the document's own)")
    .option('--time <rfc3339>', 'with --format: the report time of a document that carries none (default: now)')
    .option('--wait', 'wait until the worker has processed every queued report, then report failed bundles')
    .addOption(
      new Option('--wait-timeout <seconds>', 'give up when no queued job finishes for this long (no worker running?); 0: no limit').default(
        '300',
        '300',
      ),
    )
    .option('--direct', 'apply the reports in this process instead of queueing them (backfills; embedded mode needs the service stopped)')
    .addOption(new Option('--max-pending <n>', 'pause enqueueing while the queue holds more reports than this').default('50000', '50000'))
    // The numbers of src/queue/contract.ts (BUNDLE_SIZE, BUNDLE_MAX_REPORTS), not imported here to start fast; test/cli.test.ts compares.
    .addOption(new Option('--bundle-size <n>', 'reports per queued job (1-1000)').default('250', '250'))
    .option('--json', 'print the summary as JSON')
    // Tests point the command at queues of their own (BullMQ key prefix).
    .addOption(new Option('--queue-prefix <prefix>').hideHelp())
    .action(async (inputs, opts, command) => (await import('./import-command.js')).importCommand(inputs, opts, command));
}

/**
 * Commands whose module is heavy (jobs loads BullMQ and ioredis): stand-ins that take every
 * argument and, when they run, build the real command and hand them over — its own help and usage
 * errors included.
 */
class LazyCommands {
  private readonly terms = new Map<Command, string>();
  private readonly builders = new Map<string, () => Promise<Command>>();

  constructor(private readonly program: Command) {}

  add(name: string, description: string, term: string, build: () => Promise<Command>): void {
    const standIn = this.program
      .command(name)
      .description(description)
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments()
      .argument('[args...]')
      .action(async (_args, _opts, command: Command) => {
        await (await this.real(name)).parseAsync(command.args, { from: 'user' });
      });
    this.terms.set(standIn, term);
    this.builders.set(name, build);
  }

  has(name: string): boolean {
    return this.builders.has(name);
  }

  async real(name: string): Promise<Command> {
    return (await this.builders.get(name)!()).name(`vulndb ${name}`);
  }

  /** How the command list shows a command: a stand-in by its real usage. */
  term(command: Command): string | undefined {
    return this.terms.get(command);
  }
}

function addOperatorCommands(lazy: LazyCommands): void {
  lazy.add('jobs', 'list and re-drive failed jobs of the ingest queues', 'jobs failed|retry [options]', async () => {
    const [{ configGetter }, { jobsCommand }] = await Promise.all([import('./config.js'), import('./jobs.js')]);
    return jobsCommand(await configGetter()).showHelpAfterError();
  });
  lazy.add(
    'recompute',
    "rebuild findings' state from the stored history (embedded mode: stop the service first)",
    'recompute [options]',
    async () => {
      const [{ configGetter }, { recomputeCommand }] = await Promise.all([import('./config.js'), import('./recompute.js')]);
      return recomputeCommand(await configGetter()).showHelpAfterError();
    },
  );
}

/** `vulndb help <command>`: commander's own would show a stand-in's help, not the real command's. */
function addHelp(program: Command, lazy: LazyCommands): void {
  program.helpCommand(false);
  program
    .command('help')
    .description('display help for command')
    .argument('[command]')
    .action(async (name: string | undefined) => {
      if (name === undefined) return program.help();
      if (lazy.has(name)) return (await lazy.real(name)).help();
      const command = program.commands.find((c) => c.name() === name);
      return command ? command.help() : program.error(`error: unknown command '${name}'`);
    });
  program.configureHelp({ subcommandTerm: (command) => lazy.term(command) ?? Help.prototype.subcommandTerm.call(new Help(), command) });
}

function vulndbProgram(): Command {
  const program = new Command('vulndb')
    .description('Vulnerability tracking service: Vulcan check reports in, findings and security metrics out.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .addHelpText('after', EXIT_HELP)
    // Before the commands: .command() copies these settings into each of them.
    .exitOverride()
    .showHelpAfterError();
  addServiceCommands(program);
  const lazy = new LazyCommands(program);
  addOperatorCommands(lazy);
  addHelp(program, lazy);
  return program;
}

/** Commander has printed its own errors (and help); ours are one line. */
function exitOnError(err: unknown): never {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage);
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`vulndb: ${message}\n`);
  process.exit(err instanceof CliError ? err.exitCode : EXIT.failed);
}

vulndbProgram().parseAsync(process.argv).catch(exitOnError);
