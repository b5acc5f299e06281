import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ingestBatch } from '../src/ingest/batch.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { migrate, MigrationError, SQL_DIR } from '../src/storage/migrate.js';
import { testStoreConfig } from './support/engine.js';
import { report, V, worked } from './support/reports.js';
import { issueCountsFromFindings, snapshot } from './support/snapshot.js';

/**
 * The migration runner on a store that already holds data: a migration with a backfill (0011, the
 * per-issue counters) counts what was stored before it, keeps counting what comes after, and adds
 * nothing when it runs again because the ledger row after it was never written (a crash).
 */

const dirs: string[] = [];
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A folder with the migrations of sql/ up to `last`. */
function migrationsUpTo(last: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-migrations-'));
  dirs.push(dir);
  for (const f of fs.readdirSync(SQL_DIR).filter((f) => Number(f.slice(0, 4)) <= last)) fs.copyFileSync(path.join(SQL_DIR, f), path.join(dir, f));
  return dir;
}

async function openEmpty(): Promise<Store> {
  const store = await openStore(testStoreConfig());
  stores.push(store);
  return store;
}

async function ingest(store: Store, raws: Record<string, unknown>[]) {
  const reports = raws.map((raw) => {
    const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
    if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
    return p.report;
  });
  await ingestBatch(store, reports, { now: 1_800_000_000 });
}

const other = { summary: 'Exposed admin panel', description: 'Admin UI reachable', score: 9.1 };
const before = [
  worked.r1,
  worked.r2,
  worked.r3, // V on www.example.com is FIXED
  report({ check_id: 'b-1', target: 'b.example.com', end_time: '2024-01-01 12:00:00', vulnerabilities: [V, other] }),
];
const after = [
  worked.r4, // V reopens on www.example.com
  report({ check_id: 'b-2', target: 'b.example.com', end_time: '2024-01-04 12:00:00', vulnerabilities: [other] }), // V fixed on b
  report({ check_id: 'c-1', target: 'c.example.com', end_time: '2024-01-04 12:00:00', vulnerabilities: [other] }),
];

describe('migrations on a store that holds data', () => {
  it('0011 counts the findings stored before it and those written after it', async () => {
    const store = await openEmpty();
    expect(await migrate(store, undefined, migrationsUpTo(10))).toHaveLength(10);
    await ingest(store, before);
    expect(await migrate(store)).toEqual([11]);
    const backfilled = (await snapshot(store)).issueCounts;
    expect(backfilled).toEqual(await issueCountsFromFindings(store));
    // V: FIXED on www, OPEN on b; the admin panel OPEN on b.
    expect(backfilled.map((c) => [c.open_n, c.fixed_n]).sort()).toEqual([
      [1, 0],
      [1, 1],
    ]);

    await ingest(store, after);
    const counted = (await snapshot(store)).issueCounts;
    expect(counted).toEqual(await issueCountsFromFindings(store));
    // V: OPEN again on www, FIXED on b; the admin panel OPEN on b and c.
    expect(counted.map((c) => [c.open_n, c.fixed_n]).sort()).toEqual([
      [1, 1],
      [2, 0],
    ]);

    // A crash after the backfill and before its ledger row: the whole migration runs again.
    await store.command('DELETE FROM schema_migrations WHERE version = 11');
    expect(await migrate(store)).toEqual([11]);
    expect((await snapshot(store)).issueCounts).toEqual(counted);
  });

  it('refuses to start when a landed migration changed', async () => {
    const store = await openEmpty();
    const dir = migrationsUpTo(11);
    await migrate(store, undefined, dir);
    const file = fs.readdirSync(dir).find((f) => f.startsWith('0011_'))!;
    fs.appendFileSync(path.join(dir, file), '\n-- edited after landing\n');
    const refused = migrate(store, undefined, dir);
    await expect(refused).rejects.toThrow(MigrationError);
    await expect(refused).rejects.toThrow('migration 0011_issue_finding_counts.sql changed after it was applied');
  });
});
