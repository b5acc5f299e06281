import { Command, InvalidArgumentError, Option } from 'commander';
import { isUuid } from '../domain/uuid.js';
import { cliConfig } from './config.js';
import { usageError } from './exit.js';

/**
 * `vulndb token --sub alice --teams <uuid>,<uuid> [--admin] [--ttl 1h]`: prints a metrics API
 * token (SPEC §8.1) signed HS256 with JWT_SECRET, or with the secret kept in
 * `<DATA_DIR>/jwt-secret` when neither JWT_SECRET nor JWT_PUBLIC_KEY is set (the one a fresh
 * `npm start` uses). With only JWT_PUBLIC_KEY the signing key lives elsewhere: nothing to sign with.
 */

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `90`, `90s`, `15m`, `1h`, `7d` → seconds. */
export function parseTtl(text: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(text.trim());
  const seconds = m ? Number(m[1]) * UNIT_SECONDS[m[2] || 's']! : NaN;
  if (!Number.isSafeInteger(seconds) || seconds <= 0)
    throw new InvalidArgumentError('expected a positive duration such as 90s, 15m, 1h or 7d');
  return seconds;
}

export function parseTeams(text: string): string[] {
  const teams = [
    ...new Set(
      text
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== ''),
    ),
  ];
  const bad = teams.filter((t) => !isUuid(t));
  if (bad.length > 0) throw new InvalidArgumentError(`team ids must be UUIDs: ${bad.join(', ')}`);
  return teams;
}

/** The command; signing (src/metrics) is imported when it runs, so `vulndb token` starts fast. */
export function tokenCommand(): Command {
  const command = new Command('token')
    .description('print a metrics API token (HS256 with JWT_SECRET, or the secret generated in DATA_DIR)')
    .requiredOption('--sub <user>', 'the user the token names (claim "sub")')
    .addOption(new Option('--teams <ids>', 'comma-separated team ids the user belongs to').argParser(parseTeams).default([], 'none'))
    .option('--admin', 'grant administrator rights (every team, global metrics)', false)
    .option('--ingest', 'grant the ingest scope: POST /checks and POST /targets under DB_API_AUTH=jwt', false)
    .addOption(new Option('--ttl <duration>', 'lifetime: seconds or a number with s, m, h or d').argParser(parseTtl).default(3600, '1h'));
  return command.action(async (opts: { sub: string; teams: string[]; admin: boolean; ingest: boolean; ttl: number }) => {
    if (opts.sub.trim() === '') usageError(command, "option '--sub <user>' must not be empty");
    const [config, { mintToken }] = await Promise.all([cliConfig(), import('./token-mint.js')]);
    process.stdout.write(
      `${mintToken(config, { sub: opts.sub, teams: opts.teams, admin: opts.admin, ttl: opts.ttl, ...(opts.ingest ? { scopes: ['ingest'] } : {}) })}\n`,
    );
  });
}
