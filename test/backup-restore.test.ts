import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifest, type Manifest } from '../src/backup/manifest.js';
import { restoreSnapshot, StoreNotEmpty } from '../src/backup/restore.js';
import { takeSnapshot } from '../src/backup/snapshot.js';
import { targetId } from '../src/domain/ids.js';
import { rewriteTotals } from '../src/ingest/totals.js';
import { ingestBatch } from '../src/ingest/batch.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { CommitGate } from '../src/locks/commit-gate.js';
import { ProcessLocks } from '../src/locks/target-locks.js';
import { silentLogger } from '../src/log.js';
import { dbOperations, metricsOperations } from '../src/openapi/operations.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { loadMigrations, migrate } from '../src/storage/migrate.js';
import { copyAllToTeams } from '../src/teams/team-copies.js';
import { fid, I1, I3, iid, loadCatalog, NOW, reports as catalog, sid, T1, T2, TEAM_A, TEAM_B, tid } from './support/api-catalog.js';
import { testStoreConfig } from './support/engine.js';
import { backToSchema15 } from './support/older-schema.js';
import { ADMIN_TOKEN, METRICS_SECRET, putDecision } from './support/metrics.js';
import { report, V, worked } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/** The schema version of this tree: a snapshot taken now records it, an older one is migrated up to it. */
const latestSchema = loadMigrations().at(-1)!.version;
const laterThan15 = loadMigrations()
  .map((m) => m.version)
  .filter((v) => v > 15);

/**
 * SPEC §14: a snapshot taken while reports stream in holds each batch wholly or not at all; the
 * store restored from it answers every GET of both APIs as a store that ingested exactly the
 * reports in the snapshot (same fixed now); a store holding data refuses a restore; an older
 * snapshot gets the later migrations.
 */

const now = () => Date.parse(NOW) / 1000;
const env = { JWT_SECRET: METRICS_SECRET, WEBHOOK_ALLOW_PRIVATE: 'true' };
const dirs: string[] = [];
const stores: Store[] = [];
const services: TestService[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-backup-'));
  dirs.push(dir);
  return dir;
};

afterAll(async () => {
  for (const s of services) await s.close();
  for (const s of stores) await s.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** The n-th report of the stream: one of six targets, its vulnerabilities changing from scan to scan. */
function streamed(n: number): Record<string, unknown> {
  const target = `s${n % 6}.example.com`;
  const day = String(1 + (n % 27)).padStart(2, '0');
  const vulns = [I1, I3, V].filter((_, i) => (n >> i) % 2 === 0);
  return report({
    check_id: `s-${n}`,
    checktype_name: 'vulcan-web',
    target,
    end_time: `2024-02-${day} 0${n % 10}:00:00`,
    vulnerabilities: vulns,
  });
}

const postBackup = (svc: TestService, dir: string) =>
  fetch(`${svc.adminUrl}/admin/backup`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ dir }) });

/** POST /admin/backup to the service's admin listener: its JSON lines. */
async function backupThrough(svc: TestService, dir: string): Promise<Record<string, any>[]> {
  const res = await postBackup(svc, dir);
  expect(res.status).toBe(200);
  return (await res.text())
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

/** The history every store starts with: the catalog, its teams, a decision and a webhook. */
async function history(svc: TestService): Promise<void> {
  await loadCatalog(svc);
  await json(putDecision(svc.metricsApiUrl!, fid(T2, I3), { decision: 'false_positive', reason: 'A honeypot.' }, ADMIN_TOKEN));
}

/** Every GET of both APIs with the catalog's ids in its path (the webhooks' list is compared with the source's). */
function everyGet(): string[] {
  const ids: Record<string, string> = {
    team_id: TEAM_A,
    finding_id: fid(T1, I1),
    source_id: sid('c3'),
    issue_id: iid(I1),
    target_id: tid(T2),
    resource: encodeURIComponent(T2),
  };
  const fill = (p: string) => p.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!);
  const paths = [...dbOperations, ...metricsOperations]
    .filter((o) => o.method === 'get' && !o.path.includes('healthcheck') && !o.path.endsWith('/webhooks'))
    .map((o) => fill(o.path));
  const lists = [
    '/findings?size=100',
    '/findings?status=OPEN&size=100',
    '/findings?minScore=5&sortBy=-score',
    '/sources?size=100',
    '/targets?size=100',
  ];
  const metrics = ['open', 'fixed', 'mttr', 'exposure', 'assets'].map((m) => `/api/v1/teams/${TEAM_B}/stats/${m}`);
  return [...paths, ...lists, ...metrics, '/stats/open?atDate=2024-02-10', '/api/v1/stats/mttr?minDate=2024-02-01&maxDate=2024-02-20'];
}

/** The answers to `paths`, with the decision's id (random, made by each store) named the same. */
async function answers(svc: TestService, paths: string[]): Promise<Record<string, unknown>> {
  const get = async (p: string) => {
    const base = p.startsWith('/api/v1/') ? svc.metricsApiUrl : svc.dbApiUrl;
    const res = await fetch(`${base}${p}`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    return { status: res.status, text: await res.text() };
  };
  const decided = JSON.parse((await get(`/api/v1/findings/${fid(T2, I3)}/decisions`)).text) as { decisions: { id: string }[] };
  const out: Record<string, unknown> = {};
  for (const p of paths) {
    const { status, text } = await get(p);
    out[p] = { status, body: JSON.parse(decided.decisions.reduce((t, d) => t.replaceAll(d.id, 'the-decision'), text) || 'null') };
  }
  return out;
}

describe('a snapshot taken while reports stream in', () => {
  let source: TestService;
  let manifest: Manifest;
  let lines: Record<string, any>[];
  let posted: Map<string, Record<string, unknown>>;
  let restoredDb: string;
  let storedAfter: number;
  const dir = () => path.join(dirs[0]!, 'snap');

  beforeAll(async () => {
    tempDir();
    source = await startTestService({ now, env });
    services.push(source);
    await history(source);
    await json(source.postJson('/targets', { identifier: T1, teams: [TEAM_A] }), 201);
    const hook = await fetch(`${source.metricsApiUrl}/api/v1/webhooks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['finding.fixed'] }),
    });
    expect(hook.status).toBe(201);

    posted = new Map(catalog.map((r) => [sid(String(r.check_id)), r]));
    let producing = true;
    const producer = (async () => {
      for (let n = 0; producing; n++) {
        const r = streamed(n);
        posted.set(sid(String(r.check_id)), r);
        await json(source.postJson('/checks', r), 202);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 400));
    lines = await backupThrough(source, dir());
    await new Promise((resolve) => setTimeout(resolve, 400));
    producing = false;
    await producer;
    await source.settle();
    storedAfter = (await source.store.query<{ n: number }>('SELECT count() AS n FROM sources FINAL'))[0]!.n;
    expect(lines.at(-1)).toEqual({ manifest: expect.anything() });
    manifest = lines.at(-1)!.manifest as Manifest;

    const target = await openStore(testStoreConfig());
    stores.push(target);
    restoredDb = target.database;
    await restoreSnapshot(target, dir(), silentLogger);
  }, 120_000);

  it('shows progress, ends with the verified manifest the folder holds, and holds some of the stream, not all of it', () => {
    expect(lines.some((l) => l.progress?.phase === 'freeze')).toBe(true);
    expect(lines.some((l) => l.progress?.phase === 'backup')).toBe(true);
    // How long writers waited: recorded, and far below the seconds the snapshot takes.
    expect(manifest.pause_ms).toBeGreaterThanOrEqual(0);
    expect(manifest.pause_ms).toBeLessThan(5000);
    expect(lines.some((l) => l.progress?.phase === 'verify')).toBe(true);
    expect(readManifest(dir())).toEqual(manifest);
    expect(manifest.bytes).toBeGreaterThan(0);
    expect(manifest.schema_version).toBe(latestSchema);
    expect(manifest.sources).toBeGreaterThan(catalog.length);
    expect(manifest.sources).toBeLessThan(storedAfter);
  });

  it('restored, answers every GET of both APIs as a store that ingested exactly the reports it holds', async () => {
    const restored = await startTestService({ now, env, database: restoredDb });
    services.push(restored);
    const held = (await restored.store.query<{ id: string }>('SELECT toString(id) AS id FROM sources')).map((r) => r.id);
    expect(held).toHaveLength(manifest.sources);
    const reference = await startTestService({ now, env });
    services.push(reference);
    await history(reference);
    for (const id of held.filter((id) => !catalog.some((r) => sid(String(r.check_id)) === id)))
      await json(reference.postJson('/checks', posted.get(id)!), 202);
    await reference.settle();
    await json(reference.postJson('/targets', { identifier: T1, teams: [TEAM_A] }), 201);

    const paths = everyGet();
    expect(await answers(restored, paths)).toEqual(await answers(reference, paths));
    // Subscriptions and decisions are the source's own (ids and instants are not the reference's).
    const own = ['/api/v1/webhooks', `/api/v1/findings/${fid(T2, I3)}/decisions`];
    expect(await answers(restored, own)).toEqual(await answers(source, own));
  }, 120_000);

  it('is refused by a store that holds data', async () => {
    const target = await openStore(testStoreConfig(restoredDb));
    stores.push(target);
    await expect(restoreSnapshot(target, dir(), silentLogger)).rejects.toThrow(StoreNotEmpty);
  });

  it('is refused by the service into a folder that is not empty', async () => {
    const res = await postBackup(source, dir());
    expect(res.status).toBe(422);
    expect(((await res.json()) as { message: string }).message).toMatch(/not an empty folder/);
  });
});

describe('a snapshot of an older schema', () => {
  it('is restored with the later migrations applied, as a store that always had them', async () => {
    const ingest = async (store: Store) => {
      const raws = [
        worked.r1,
        worked.r2,
        worked.r3,
        report({ check_id: 'b-1', target: 'b.example.com', end_time: '2024-01-01 12:00:00', vulnerabilities: [V] }),
      ];
      const prepared = raws
        .map((raw) => prepareReport(raw, { maxEventAgeDays: 0, now: 0 }))
        .map((p) => (p.kind === 'report' ? p.report : null)!);
      await ingestBatch(store, prepared, { now: 1_800_000_000 });
      await store.insert('target_teams', [{ team: 'team-b', target_id: targetId('b.example.com'), associated_seq: 1 }]);
      await copyAllToTeams(store);
      await rewriteTotals(store, new ProcessLocks());
    };
    const [old, target] = [await openStore(testStoreConfig()), await openStore(testStoreConfig())];
    stores.push(old, target);
    await migrate(old);
    await ingest(old);
    await backToSchema15(old);

    const dir = path.join(tempDir(), 'old');
    const manifest = await takeSnapshot({ store: old, gate: new CommitGate(), log: silentLogger }, dir);
    expect(manifest.schema_version).toBe(15);
    const { migrations } = await restoreSnapshot(target, dir, silentLogger);
    expect(migrations).toEqual(laterThan15);
    // The source store, migrated forward in place, is what the restored one must equal.
    expect(await migrate(old)).toEqual(laterThan15);
    const current = old;
    const derived = (s: Store) =>
      s.query(
        `SELECT toString(id) AS id, fix_seconds, toUInt32(latest_at) AS latest, toString(status) AS status FROM findings FINAL ORDER BY id`,
      );
    expect(await derived(target)).toEqual(await derived(current));
    expect(await target.query('SELECT count() AS n FROM finding_decisions')).toEqual([{ n: 0 }]);
  }, 60_000);
});

describe('the snapshot folder', () => {
  it('must be absolute and new or empty', async () => {
    const store = await openStore(testStoreConfig());
    stores.push(store);
    const deps = { store, gate: new CommitGate(), log: silentLogger };
    await expect(takeSnapshot(deps, 'relative/dir')).rejects.toThrow(/absolute/);
    const full = tempDir();
    fs.writeFileSync(path.join(full, 'x'), 'x');
    await expect(takeSnapshot(deps, full)).rejects.toThrow(/not an empty folder/);
    await expect(restoreSnapshot(store, full, silentLogger)).rejects.toThrow(/manifest.json is missing/);
  });
});

describe("a cluster's documented statements", () => {
  it('are BACKUP and RESTORE … ON CLUSTER statements the engine parses, to a disk and to S3', async () => {
    const store = await openStore(testStoreConfig());
    stores.push(store);
    const doc = fs.readFileSync(path.resolve('docs/OPERATIONS.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Backup and restore'), doc.indexOf('## Reference'));
    const statements = [...section.matchAll(/^(BACKUP|RESTORE) DATABASE .*;$/gm)].map((m) => m[0].slice(0, -1));
    for (const s of statements) expect(s).toContain(' ON CLUSTER ');
    expect(
      statements.map((s) =>
        s
          .match(/(TO|FROM) (\w+)\(/)!
          .slice(1)
          .join(' '),
      ),
    ).toEqual(['TO Disk', 'TO S3', 'FROM Disk']);
    for (const s of statements) expect((await store.query(`EXPLAIN AST ${s}`)).length).toBeGreaterThan(0);
    await expect(store.query('EXPLAIN AST BACKUP DATABASE vulndb INTO Disk()')).rejects.toThrow();
  });
});
