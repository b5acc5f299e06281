import type { Command } from 'commander';

/**
 * Exit codes of the operator commands (`vulndb jobs`, `vulndb recompute`): 0 done, 1 the operation
 * failed or found nothing to act on (Redis or the store unreachable, an unknown job or target),
 * 2 the command line or the configuration is wrong (nothing was attempted).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** Commander's own errors (unknown option, missing argument) exit with the usage code too. */
export function usageErrorsExit2(command: Command): Command {
  return command.exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage));
}

/** A usage error of `command`: its message on stderr, exit code 2. */
export function usageError(command: Command, message: string): never {
  command.error(`error: ${message}`, { exitCode: EXIT.usage, code: 'vulndb.usage' });
}
