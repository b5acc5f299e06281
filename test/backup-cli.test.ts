import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalog, reports as catalog } from './support/api-catalog.js';
import { testDataDir } from './support/engine.js';
import { startTestService, type TestService } from './support/service.js';
import { NO_REDIS, runVulndb } from './support/cli-run.js';
import { freePort } from './support/private-redis.js';
import { loadMigrations } from '../src/storage/migrate.js';

/** The version of the last migration in sql/: a snapshot of a store that has them all carries it. */
const latestSchema = loadMigrations().at(-1)!.version;

/**
 * `vulndb backup` asks the running service through its admin listener; `vulndb restore` fills an
 * empty data folder of its own (SPEC §14), and refuses one that holds data (exit 1).
 */

// No Redis by default: neither command needs it (embedded mode), and no one else's keys are touched.
const vulndb = (args: string[], env: Record<string, string> = {}) => runVulndb(args, env, 90_000);

let svc: TestService;
const snap = () => path.join(testDataDir(), 'cli-snapshot');
const restoredFolder = () => path.join(testDataDir(), 'cli-restored');

beforeAll(async () => {
  svc = await startTestService();
  await loadCatalog(svc);
}, 60_000);
afterAll(() => svc.close());

describe('vulndb backup', () => {
  it('writes a verified snapshot through the service, with progress and its size', async () => {
    const run = await vulndb(['backup', snap(), '--admin-url', svc.adminUrl, '--json']);
    expect(run).toMatchObject({ code: 0 });
    const summary = JSON.parse(run.stdout) as { dir: string; sources: number; bytes: number; schema_version: number };
    expect(summary).toMatchObject({ dir: snap(), sources: catalog.length, schema_version: latestSchema });
    expect(summary.bytes).toBeGreaterThan(0);
    expect(run.stderr).toMatch(/verify: \d+\/\d+ tables/);
    expect(run.stderr).toContain('tables frozen; writers running again');
    expect(fs.existsSync(path.join(snap(), 'manifest.json'))).toBe(true);
  }, 90_000);

  it('refuses a folder that is not empty (exit 2) and a service it cannot reach (exit 1)', async () => {
    const full = await vulndb(['backup', snap(), '--admin-url', svc.adminUrl]);
    expect(full.code).toBe(2);
    expect(full.stderr).toContain('is not an empty folder');
    const away = await vulndb(['backup', path.join(testDataDir(), 'cli-elsewhere'), '--admin-url', 'http://127.0.0.1:1']);
    expect(away.code).toBe(1);
    expect(away.stderr).toContain('the service is not reachable at http://127.0.0.1:1');
  }, 60_000);
});

describe('vulndb restore', () => {
  it('fills an empty data folder, which then holds the history, and refuses it the second time', async () => {
    const env = { DATA_DIR: restoredFolder() };
    const first = await vulndb(['restore', snap(), '--json'], env);
    expect(first).toMatchObject({ code: 0 });
    expect(JSON.parse(first.stdout)).toMatchObject({ sources: catalog.length, schema_version: latestSchema, migrations: [] });

    // The restored folder holds the catalog: recomputing it finds its findings, and nothing to change.
    const recompute = await vulndb(['recompute', '--json'], env);
    expect(JSON.parse(recompute.stdout)).toMatchObject({ targets: 4, findings: 8, versions: 0 });

    const again = await vulndb(['restore', snap()], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('holds data');
  }, 120_000);

  it('refuses a folder that is not a snapshot (exit 2)', async () => {
    const run = await vulndb(['restore', path.join(testDataDir(), 'cli-nothing')], { DATA_DIR: path.join(testDataDir(), 'cli-other') });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('manifest.json is missing');
  }, 60_000);
});

describe('vulndb backup and restore against a ClickHouse server (CLICKHOUSE_URL)', () => {
  // Nothing listens there: what is checked before the server is asked, and the failure to reach it.
  const server = async () => ({ CLICKHOUSE_URL: `http://127.0.0.1:${await freePort()}` });

  it('take disk:<disk>/<name> or s3:<URL>, and refuse anything else before reaching the server (exit 2)', async () => {
    const env = await server();
    for (const [args, message] of [
      [['backup', '/backups/x'], 'a server destination is disk:<disk>/<name>'],
      [['backup', 'disk:backups'], 'a server destination is disk:<disk>/<name>'],
      [['backup', 'disk:backups/../x'], 'has an empty or ".." part'],
      [['restore', 'ftp://host/x'], 'a server destination is disk:<disk>/<name>'],
      [['backup', 's3:https://key:secret@bucket.example.com/x'], 'must not hold credentials'],
    ] as const) {
      const run = await vulndb([...args], env);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).toContain(message);
      expect(run.stderr).not.toContain('secret@');
    }
    const half = await vulndb(['backup', 's3:https://bucket.example.com/x'], { ...env, BACKUP_S3_SECRET_ACCESS_KEY: 'hush-hush' });
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('go together');
    expect(half.stderr).not.toContain('hush-hush');
  }, 60_000);

  it('fail with exit 1 when the server does not answer', async () => {
    const env = await server();
    const backup = await vulndb(['backup', 'disk:backups/vulndb-1'], env);
    expect(backup.code).toBe(1);
    expect(backup.stderr).toContain(env.CLICKHOUSE_URL.replace('http://', ''));
    const restore = await vulndb(['restore', 's3:https://bucket.example.com/x'], { ...env, REDIS_URL: NO_REDIS });
    expect(restore.code).toBe(1);
    expect(restore.stderr).toContain('whether the service is stopped is not checked');
  }, 60_000);

  it('in embedded mode, refuse a server destination (exit 2)', async () => {
    const run = await vulndb(['backup', 'disk:backups/x'], { DATA_DIR: path.join(testDataDir(), 'cli-unused') });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('set CLICKHOUSE_URL');
  }, 60_000);
});
