import { Command } from 'commander';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { RecomputeProgress as RecomputeSummary } from '../ingest/recompute.js';
import { EXIT, usageErrorsExit2 } from './exit.js';
import { progressShower } from './progress.js';

/**
 * `vulndb recompute [--target <identifier>]`: rebuilds finding state from the stored history
 * (src/ingest/recompute.ts) and prints progress on stderr and a summary on stdout.
 */

const HELP = `
Re-derives every finding's OPEN periods, status and score from the stored sources and FOUND
events (SPEC §3.5), e.g. after a fix to the derivation, and writes a new findings version only
where the stored one differs; counters, the findings lists' totals and the response cache
follow. Targets are done 500 at a time, each step holding its targets' ingest locks.

Embedded mode (no CLICKHOUSE_URL): the data folder belongs to one process, so stop the service
first. Server mode: workers may keep running (the target locks in Redis keep both consistent).

Exit codes: 0 done, 1 failed (store or Redis unreachable, unknown target, locks held too long),
2 usage or configuration error.`;

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** `targets 500/12000  findings 41000  new versions 3 (1 status changes) …  (350 targets/s, ETA 33 s)` */
export function progressLine(p: RecomputeSummary, seconds: number): string {
  const rate = seconds > 0 ? p.targets / seconds : 0;
  const eta = p.targets >= p.total ? '' : `, ETA ${rate > 0 ? duration((p.total - p.targets) / rate) : '?'}`;
  return (
    `targets ${p.targets}/${p.total}  findings ${p.findings}  new versions ${p.versions} (${p.statusChanges} status changes)  ` +
    `latest events rewritten ${p.latestEvents}  (${Math.round(rate)} targets/s${eta})`
  );
}

function summaryLine(summary: RecomputeSummary, seconds: number): string {
  return (
    `recomputed ${summary.findings} findings of ${summary.targets} targets in ${seconds.toFixed(1)} s: ` +
    `${summary.versions} new versions (${summary.statusChanges} status changes), ${summary.latestEvents} latest events rewritten` +
    (summary.orphans > 0 ? `, ${summary.orphans} findings without a FOUND event of a stored source left as they are` : '') +
    '\n'
  );
}

/** Bumps the response cache's data version after a change: answers cached before must not outlive it. */
function dataVersionBumper(redis: Redis, redisUp: boolean, bumpAll: (redis: Redis) => Promise<void>) {
  let stale = false;
  return {
    bump: async () => {
      const ok =
        redisUp &&
        (await bumpAll(redis).then(
          () => true,
          () => false,
        ));
      if (!ok) stale = true;
    },
    /** Whether a bump could not be made (Redis down). */
    stale: () => stale,
  };
}

/**
 * Runs the recompute with its progress on stderr, then prints the summary (exit 0) or why it did
 * not run (an unknown target, a target lock held elsewhere: exit 1).
 */
async function report(
  cfg: Config,
  opts: { json?: boolean },
  version: ReturnType<typeof dataVersionBumper>,
  run: (onProgress: (p: RecomputeSummary) => void) => Promise<RecomputeSummary | Error>,
): Promise<void> {
  const progress = progressShower();
  const started = performance.now();
  const show = (p: RecomputeSummary, force = false) => progress.show(progressLine(p, (performance.now() - started) / 1000), force);
  const summary = await run((p) => show(p, p.targets === 0));
  if (summary instanceof Error) {
    progress.end();
    process.stderr.write(`${summary.message}\n`);
    process.exitCode = EXIT.failed;
    return;
  }
  show(summary, true);
  progress.end();
  if (version.stale()) {
    process.stderr.write(
      `warning: Redis at ${cfg.redisUrl} did not answer, so the data version was not bumped: ` +
        'answers the API cached before this recompute can be served for up to 10 minutes after it restarts\n',
    );
  }
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(opts.json ? `${JSON.stringify({ ...summary, seconds })}\n` : summaryLine(summary, seconds));
  process.exitCode = EXIT.ok;
}

async function recompute(cfg: Config, opts: { target?: string; json?: boolean }): Promise<void> {
  const [
    { createLogger },
    { openStore, ownsItsData },
    { migrate },
    { recomputeFindings, UnknownTarget },
    locksModule,
    redisModule,
    { bumpAllData },
  ] = await Promise.all([
    import('../log.js'),
    import('../storage/gateway.js'),
    import('../storage/migrate.js'),
    import('../ingest/recompute.js'),
    import('../locks/target-locks.js'),
    import('../queue/redis.js'),
    import('../cache/data-version.js'),
  ]);
  const { ProcessLocks, TargetLocks, LockTimeout } = locksModule;
  const { defaultRedisNames, requestConnection, whenReady } = redisModule;
  const log = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const store = await openStore(cfg.store);
  const redis = requestConnection(cfg.redisUrl);
  let redisUp = false;
  try {
    await migrate(store, log);
    redisUp = await whenReady(redis, 2000);
    // An embedded data folder belongs to this process alone; a shared server needs the workers' locks.
    if (!ownsItsData(store) && !redisUp) {
      process.stderr.write(`recompute against a ClickHouse server needs Redis (target locks) at ${cfg.redisUrl}\n`);
      process.exitCode = EXIT.failed;
      return;
    }
    const locks = ownsItsData(store) ? new ProcessLocks() : new TargetLocks(redis, defaultRedisNames);
    const version = dataVersionBumper(redis, redisUp, (r) => bumpAllData(r, defaultRedisNames));
    await report(cfg, opts, version, (onProgress) =>
      recomputeFindings(store, locks, {
        ...(opts.target !== undefined ? { target: opts.target } : {}),
        log,
        onProgress,
        onChanged: version.bump,
      }).catch((err: unknown) => {
        if (err instanceof UnknownTarget || err instanceof LockTimeout) return err;
        throw err;
      }),
    );
  } finally {
    // quit() waits for a connection that never comes when Redis is down, and keeps the process alive.
    if (redisUp) await redis.quit().catch(() => undefined);
    else redis.disconnect();
    await store.close();
  }
}

export function recomputeCommand(config: () => Config): Command {
  const command = new Command('recompute')
    .description("rebuild findings' state from the stored history (embedded mode: stop the service first)")
    .option('--target <identifier>', 'only the target with this identifier')
    .option('--json', 'print the summary as JSON')
    .addHelpText('after', HELP);
  return usageErrorsExit2(command).action((opts: { target?: string; json?: boolean }) => recompute(config(), opts));
}
