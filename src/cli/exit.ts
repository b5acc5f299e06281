import type { Command } from 'commander';

/**
 * Exit codes of every `vulndb` command: 0 done, 1 the work failed in part or whole (reports
 * rejected or failed, Redis or the store unreachable, an import that stopped progressing, an
 * unknown job or target), 2 the command line, the inputs or the configuration are wrong (nothing
 * was attempted: an unknown option, a bad option value, a missing file, an invalid env var).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** The exit codes, for the end of `--help`. */
export const EXIT_HELP =
  '\nExit codes: 0 done, 1 some reports rejected or failed (or the work failed), 2 usage, input or configuration error.';

/**
 * An error the CLI reports on one line (`vulndb: <message>`) with its exit code, instead of a
 * stack: raised by actions and handled once, by main.ts.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Commander's own errors (unknown option, missing argument) exit with the usage code too. */
export function usageErrorsExit2(command: Command): Command {
  return command.exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage));
}

/** A usage error of `command`: its message on stderr (then its help, if it shows help after errors), exit code 2. */
export function usageError(command: Command, message: string): never {
  command.error(`error: ${message}`, { exitCode: EXIT.usage, code: 'vulndb.usage' });
}
