import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { CliError, EXIT } from './exit.js';
import { formatBytes, progressShower } from './progress.js';

/**
 * `vulndb backup <destination>` and `vulndb restore <destination>` against a ClickHouse server
 * (CLICKHOUSE_URL; SPEC §14, src/backup/server-snapshot.ts): the destination is `disk:<disk>/<name>`
 * or `s3:<URL>`, configured on the server. The backup closes the commit gate in Redis that every
 * writing process passes (src/locks/shared-gate.ts), so Redis must answer; the restore refuses
 * while ingest workers are connected to the queue.
 */

/** Longest the writers can be held, even if this process dies; and how long to wait for the batches in flight. */
const GATE = { maxHoldMs: 60_000, drainMs: 60_000 };

async function parse(text: string) {
  const { parseDestination, DestinationError } = await import('../backup/destination.js');
  try {
    return parseDestination(text, process.env);
  } catch (err) {
    if (err instanceof DestinationError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
}

/** A Redis connection that fails fast: the CLI reports an unreachable Redis instead of waiting for it. */
async function redisOf(cfg: Config, purpose: string): Promise<Redis> {
  const [{ requestConnection, whenReady }] = await Promise.all([import('../queue/redis.js')]);
  const redis = requestConnection(cfg.redisUrl);
  if (!(await whenReady(redis, 5000))) {
    redis.disconnect();
    throw new CliError(`Redis is not reachable at ${new URL(cfg.redisUrl).host}: ${purpose}`);
  }
  return redis;
}

/** The failures an operator acts on, as CLI errors with their exit codes. */
async function asCliError(err: unknown): Promise<unknown> {
  const [{ DestinationError }, { SnapshotError }, { GateRefused }, { StoreNotEmpty }] = await Promise.all([
    import('../backup/destination.js'),
    import('../backup/manifest.js'),
    import('../locks/shared-gate.js'),
    import('../backup/restore.js'),
  ]);
  if (err instanceof DestinationError) return new CliError(err.message, EXIT.usage);
  if (err instanceof SnapshotError || err instanceof GateRefused || err instanceof StoreNotEmpty) return new CliError(err.message);
  return err;
}

export async function serverBackup(cfg: Config, text: string, opts: { json?: boolean }): Promise<void> {
  const dest = await parse(text);
  const [{ createLogger }, { openStore }, { closeSharedGate }, { takeServerSnapshot }, { defaultRedisNames }, { shown }] =
    await Promise.all([
      import('../log.js'),
      import('../storage/gateway.js'),
      import('../locks/shared-gate.js'),
      import('../backup/server-snapshot.js'),
      import('../queue/redis.js'),
      import('../backup/destination.js'),
    ]);
  const log = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const store = await openStore(cfg.store);
  const progress = progressShower();
  let redis: Redis | undefined;
  try {
    redis = await redisOf(cfg, 'the snapshot closes the commit gate there, so that it is of one instant');
    const gateRedis = redis;
    const hold = <T>(work: () => Promise<T>) => closeSharedGate(gateRedis, defaultRedisNames, GATE, work);
    const m = await takeServerSnapshot({ store, hold, log }, dest, (p) =>
      progress.show(
        p.phase === 'backup'
          ? `writing the backup: ${formatBytes(p.bytes ?? 0)}`
          : p.phase === 'freeze'
            ? 'tables frozen; writers running again'
            : `${p.phase}: ${p.done}/${p.of} tables`,
        p.done === p.of,
      ),
    );
    progress.end();
    const rows = m.tables.reduce((n, t) => n + t.rows, 0);
    process.stdout.write(
      opts.json
        ? `${JSON.stringify(m)}\n`
        : `snapshot verified: ${shown(dest)}, ${formatBytes(m.bytes)} in ${m.files} files, ${m.tables.length} tables, ${rows} rows, ` +
            `${m.sources} reports, schema version ${m.schema_version}; writers waited ${m.pause_ms} ms\n`,
    );
  } catch (err) {
    progress.end();
    throw await asCliError(err);
  } finally {
    redis?.disconnect();
    await store.close();
  }
}

/** Ingest workers connected to the checks queue (a running service), when Redis answers. */
async function connectedWorkers(cfg: Config): Promise<number | undefined> {
  let redis: Redis;
  try {
    redis = await redisOf(cfg, '');
  } catch {
    return undefined;
  }
  const [{ checksQueue }, { defaultRedisNames }] = await Promise.all([import('../queue/producer.js'), import('../queue/redis.js')]);
  const queue = checksQueue(redis, defaultRedisNames);
  try {
    return await queue.getWorkersCount();
  } finally {
    await queue.close();
    redis.disconnect();
  }
}

export async function serverRestore(cfg: Config, text: string, opts: { json?: boolean }): Promise<void> {
  const dest = await parse(text);
  const workers = await connectedWorkers(cfg);
  if (workers === undefined) process.stderr.write('Redis does not answer: whether the service is stopped is not checked\n');
  else if (workers > 0)
    throw new CliError(`${workers} ingest workers are connected to the queue: stop the service (worker and api) before a restore`);
  const [{ createLogger }, { openStore }, { restoreServerSnapshot }, { shown }] = await Promise.all([
    import('../log.js'),
    import('../storage/gateway.js'),
    import('../backup/server-restore.js'),
    import('../backup/destination.js'),
  ]);
  const log = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const store = await openStore(cfg.store);
  const progress = progressShower();
  try {
    const { manifest, migrations } = await restoreServerSnapshot(store, dest, log, (p) =>
      progress.show(p.bytes !== undefined ? `restoring: ${formatBytes(p.bytes)}` : `${p.phase}: ${p.done}/${p.of}`, p.done === p.of),
    );
    progress.end();
    process.stdout.write(
      opts.json
        ? `${JSON.stringify({ destination: shown(dest), schema_version: manifest.schema_version, migrations, sources: manifest.sources })}\n`
        : `restored ${shown(dest)} (${manifest.sources} reports, schema version ${manifest.schema_version})` +
            (migrations.length > 0 ? `; migrations applied since: ${migrations.join(', ')}\n` : '\n'),
    );
  } catch (err) {
    progress.end();
    throw await asCliError(err);
  } finally {
    await store.close();
  }
}
