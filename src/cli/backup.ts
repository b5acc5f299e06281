import path from 'node:path';
import type { Config } from '../config.js';
import { CliError, EXIT } from './exit.js';
import { formatBytes, progressShower } from './progress.js';

/**
 * `vulndb backup <dir>` and `vulndb restore <dir>` (SPEC §14, src/backup). Embedded mode: the
 * running service takes the snapshot, asked through its admin listener (the data folder is its
 * alone); a restore opens the folder itself, so the service must be stopped. Against a ClickHouse
 * server both are the server's own BACKUP and RESTORE to a destination configured on it
 * (src/cli/backup-server.ts).
 */

/** A server destination (src/cli/backup-server.ts) named without a server to write it. */
function refuseServerDestination(arg: string): void {
  if (/^(disk|s3):/.test(arg))
    throw new CliError(
      `${arg.replace(/^(\w+:).*/, '$1…')} destinations are a ClickHouse server's: set CLICKHOUSE_URL (embedded mode takes a folder)`,
      EXIT.usage,
    );
}

interface BackupLine {
  progress?: { phase: string; done: number; of: number; bytes?: number };
  manifest?: { tables: { name: string; rows: number }[]; sources: number; schema_version: number; bytes: number; pause_ms?: number };
  error?: { message: string };
}

/** The admin listener's URL of this configuration (a wildcard host is reached on loopback). */
function adminUrl(cfg: Config, override: string | undefined): string {
  if (override) return override.replace(/\/$/, '');
  const host = ['0.0.0.0', '::', ''].includes(cfg.admin.host) ? '127.0.0.1' : cfg.admin.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${cfg.admin.port}`;
}

const progressText = (p: NonNullable<BackupLine['progress']>) =>
  p.phase === 'backup'
    ? `writing the store: ${formatBytes(p.bytes ?? 0)}`
    : p.phase === 'freeze'
      ? 'tables frozen; writers running again'
      : `${p.phase}: ${p.done}/${p.of} tables`;

async function askService(url: string, dir: string, token: string | undefined): Promise<Response> {
  try {
    return await fetch(`${url}/admin/backup`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ dir }),
    });
  } catch (err) {
    const reason = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new CliError(
      `the service is not reachable at ${url} (${reason}): in embedded mode the running service takes the snapshot; start it, or give --admin-url`,
    );
  }
}

export async function backupCommand(cfg: Config, dirArg: string, opts: { adminUrl?: string; json?: boolean }): Promise<void> {
  if (cfg.store.url) return (await import('./backup-server.js')).serverBackup(cfg, dirArg, opts);
  refuseServerDestination(dirArg);
  const dir = path.resolve(dirArg);
  const { checkSnapshotDir } = await import('../backup/snapshot.js');
  const refusal = checkSnapshotDir(dir);
  if (refusal) throw new CliError(refusal, EXIT.usage);
  const url = adminUrl(cfg, opts.adminUrl);
  const res = await askService(url, dir, (cfg.admin as { token?: string }).token);
  if (res.status !== 200) {
    const text = await res.text();
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {
      /* not JSON: shown as it is */
    }
    if (res.status === 404) message = `${url} has no /admin/backup: not a vulndb service in embedded mode`;
    throw new CliError(`the service refused the backup (${res.status}): ${message}`, res.status === 422 ? EXIT.usage : EXIT.failed);
  }
  const progress = progressShower();
  let last: BackupLine = {};
  let buffered = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += Buffer.from(chunk).toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const text of lines.filter((l) => l.trim() !== '')) {
      last = JSON.parse(text) as BackupLine;
      if (last.progress) progress.show(progressText(last.progress), last.progress.done === last.progress.of);
    }
  }
  progress.end();
  if (last.error) throw new CliError(`backup failed: ${last.error.message}`);
  if (!last.manifest) throw new CliError('backup failed: the service stopped answering before the snapshot was verified');
  const m = last.manifest;
  const rows = m.tables.reduce((n, t) => n + t.rows, 0);
  process.stdout.write(
    opts.json
      ? `${JSON.stringify({ dir, ...m })}\n`
      : `snapshot verified: ${dir}, ${formatBytes(m.bytes)}, ${m.tables.length} tables, ${rows} rows, ${m.sources} reports, schema version ${m.schema_version}` +
          `${m.pause_ms === undefined ? '' : `; writers waited ${m.pause_ms} ms`}\n`,
  );
}

export async function restoreCommand(cfg: Config, dirArg: string, opts: { json?: boolean }): Promise<void> {
  if (cfg.store.url) return (await import('./backup-server.js')).serverRestore(cfg, dirArg, opts);
  refuseServerDestination(dirArg);
  const dir = path.resolve(dirArg);
  const [{ createLogger }, { openStore }, { readManifest, SnapshotError }, { restoreSnapshot, StoreNotEmpty }] = await Promise.all([
    import('../log.js'),
    import('../storage/gateway.js'),
    import('../backup/manifest.js'),
    import('../backup/restore.js'),
  ]);
  try {
    readManifest(dir);
  } catch (err) {
    if (err instanceof SnapshotError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
  const log = createLogger(cfg.logLevel === 'info' ? 'warn' : cfg.logLevel);
  const store = await openStore(cfg.store);
  const progress = progressShower();
  try {
    const result = await restoreSnapshot(store, dir, log, (p) => progress.show(`${p.phase}: ${p.done}/${p.of}`, p.done === p.of));
    progress.end();
    const { manifest, migrations } = result;
    process.stdout.write(
      opts.json
        ? `${JSON.stringify({ dir, schema_version: manifest.schema_version, migrations, sources: manifest.sources })}\n`
        : `restored ${dir} (${manifest.sources} reports, schema version ${manifest.schema_version})` +
            (migrations.length > 0 ? `; migrations applied since: ${migrations.join(', ')}\n` : '\n'),
    );
  } catch (err) {
    progress.end();
    if (err instanceof StoreNotEmpty || err instanceof SnapshotError) throw new CliError(err.message);
    throw err;
  } finally {
    await store.close();
  }
}
