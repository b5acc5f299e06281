import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalog, reports as catalog } from './support/api-catalog.js';
import { testDataDir } from './support/engine.js';
import { startTestService, type TestService } from './support/service.js';
import { runVulndb } from './support/cli-run.js';

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
    expect(summary).toMatchObject({ dir: snap(), sources: catalog.length, schema_version: 19 });
    expect(summary.bytes).toBeGreaterThan(0);
    expect(run.stderr).toMatch(/verify: \d+\/\d+ tables/);
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
    expect(JSON.parse(first.stdout)).toMatchObject({ sources: catalog.length, schema_version: 19, migrations: [] });

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
