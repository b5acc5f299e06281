import { Command, InvalidArgumentError, Option } from 'commander';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { QUEUES } from '../queue/contract.js';
import { defaultRedisNames, type RedisNames } from '../queue/redis.js';
import { EXIT, usageError, usageErrorsExit2 } from './exit.js';
import { type FailedJob, type FailedList, INGEST_QUEUES, JobNotRetried, listFailed, retryAll, retryJob } from './failed-jobs.js';

/**
 * `vulndb jobs failed` and `vulndb jobs retry`: the failed jobs an operator must be able to list
 * and re-drive (SPEC §3.7; src/cli/failed-jobs.ts). The ingest queues are read by default;
 * `--queue` names any of the service's queues (src/queue/contract.ts).
 */

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function what(j: FailedJob): string {
  if (j.reports !== undefined) {
    const more = j.reports > (j.targets?.length ?? 0) ? ', …' : '';
    return `bundle of ${j.reports}: ${(j.targets ?? []).join(', ')}${more}`;
  }
  if (j.target !== undefined || j.check_id !== undefined) return `${j.target ?? '?'} (check ${j.check_id ?? '?'})`;
  if (j.webhook !== undefined) return `${j.event ?? '?'} to webhook ${j.webhook}`;
  return '';
}

/** The human-readable table of `vulndb jobs failed`. */
export function failedTable(list: FailedList): string {
  const queues = Object.keys(list.failed);
  const total = Object.values(list.failed).reduce((a, b) => a + b, 0);
  if (total === 0) return `no failed jobs in ${queues.join(', ')}\n`;
  const header = ['FAILED AT', 'QUEUE', 'ID', 'ATTEMPTS', 'REPORT', 'REASON'];
  const rows = list.jobs.map((j) => [
    j.failed_at ? j.failed_at.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-',
    j.queue,
    j.id,
    String(j.attempts),
    cut(what(j), 60),
    cut(j.reason.replace(/\s+/g, ' '), 120),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const per = queues.map((q) => `${q} ${list.failed[q]}`).join(', ');
  return [
    line(header),
    ...rows.map(line),
    '',
    `${list.jobs.length} of ${total} failed jobs shown (${per}); re-drive with: vulndb jobs retry <id> | --all`,
    '',
  ].join('\n');
}

function queuesOption() {
  return new Option('--queue <name>', `a queue to read: ${QUEUES.join(', ')} (repeatable; default: ${INGEST_QUEUES.join(', ')})`).argParser(
    (value: string, previous: string[] | undefined) => {
      // A mistyped name would read an empty queue and answer "no failed jobs": a usage error instead.
      if (!QUEUES.includes(value)) throw new InvalidArgumentError(`unknown queue; the queues are ${QUEUES.join(', ')}`);
      return [...(previous ?? []), value];
    },
  );
}

/** Tests point the command at queues of their own (BullMQ key prefix). */
const prefixOption = () => new Option('--queue-prefix <prefix>').default(defaultRedisNames.queuePrefix).hideHelp();

async function connect(config: () => Config): Promise<Redis> {
  const cfg = config();
  const { requestConnection, whenReady } = await import('../queue/redis.js');
  const redis = requestConnection(cfg.redisUrl);
  if (!(await whenReady(redis))) {
    redis.disconnect();
    process.stderr.write(`cannot reach Redis at ${cfg.redisUrl}\n`);
    process.exit(EXIT.failed);
  }
  return redis;
}

const EXIT_HELP = '\nExit codes: 0 done, 1 failed (Redis unreachable, no such failed job), 2 usage or configuration error.';

/** `vulndb jobs failed`: the newest failed jobs of the queues, as a table or JSON. */
function failedCommand(config: () => Config): Command {
  const failed = usageErrorsExit2(
    new Command('failed')
      .description(
        `list failed jobs, newest first: queue, id, reason, time, attempts and report (default queues: ${INGEST_QUEUES.join(', ')})`,
      )
      .addOption(queuesOption())
      .option('--limit <n>', 'jobs to show', '50')
      .option('--json', 'print {failed: {queue: count}, jobs: [...]} as JSON')
      .addOption(prefixOption())
      .addHelpText('after', EXIT_HELP),
  );
  return failed.action(async (opts: { queue?: string[]; limit: string; json?: boolean; queuePrefix: string }) => {
    const limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1) usageError(failed, '--limit must be a positive integer');
    const redis = await connect(config);
    try {
      const list = await listFailed(
        redis,
        { ...defaultRedisNames, queuePrefix: opts.queuePrefix },
        { queues: opts.queue ?? INGEST_QUEUES, limit },
      );
      process.stdout.write(opts.json ? `${JSON.stringify(list)}\n` : failedTable(list));
      process.exitCode = EXIT.ok;
    } finally {
      await redis.quit().catch(() => undefined);
    }
  });
}

/** Re-drives every failed job of the queues and says how many per queue. */
async function retryEvery(redis: Redis, names: RedisNames, queues: string[]): Promise<void> {
  const retried = await retryAll(redis, names, queues);
  const total = Object.values(retried).reduce((a, b) => a + b, 0);
  const per = Object.entries(retried)
    .map(([q, n]) => `${q} ${n}`)
    .join(', ');
  process.stdout.write(total === 0 ? `no failed jobs to re-drive in ${queues.join(', ')}\n` : `re-drove ${total} failed jobs (${per})\n`);
  process.exitCode = EXIT.ok;
}

/** Re-drives one failed job; one that is not there (or not failed) is exit 1 with the reason. */
async function retryOne(redis: Redis, names: RedisNames, id: string, queues: string[]): Promise<void> {
  try {
    const done = await retryJob(redis, names, id, queues);
    process.stdout.write(`re-drove 1 failed job: ${done.queue} ${done.id}\n`);
    process.exitCode = EXIT.ok;
  } catch (err) {
    if (!(err instanceof JobNotRetried)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exitCode = err.exitCode;
  }
}

/** `vulndb jobs retry`: one failed job by id, or every one (--all). */
function retryCommand(config: () => Config): Command {
  const retry = usageErrorsExit2(
    new Command('retry')
      .description('re-drive a failed job (by id) or every failed job (--all); the worker runs it again')
      .argument('[id]', 'the job id (as POST /checks answered it, or as `vulndb jobs failed` shows it)')
      .option('--all', 'every failed job of the queues')
      .addOption(queuesOption())
      .addOption(prefixOption())
      .addHelpText('after', EXIT_HELP),
  );
  return retry.action(async (id: string | undefined, opts: { all?: boolean; queue?: string[]; queuePrefix: string }) => {
    if ((id === undefined) === !opts.all) usageError(retry, 'give either a job id or --all');
    const names = { ...defaultRedisNames, queuePrefix: opts.queuePrefix };
    const queues = opts.queue ?? INGEST_QUEUES;
    const redis = await connect(config);
    try {
      await (opts.all ? retryEvery(redis, names, queues) : retryOne(redis, names, id!, queues));
    } finally {
      await redis.quit().catch(() => undefined);
    }
  });
}

export function jobsCommand(config: () => Config): Command {
  const jobs = usageErrorsExit2(new Command('jobs').description('list and re-drive failed jobs of the ingest queues'));
  return jobs.addCommand(failedCommand(config)).addCommand(retryCommand(config));
}
