import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ingestBatch } from '../src/ingest/batch.js';
import { rewriteTotals } from '../src/ingest/totals.js';
import { ProcessLocks } from '../src/locks/target-locks.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { decisionTrail } from '../src/decisions/store.js';
import { migrate, MigrationError, SQL_DIR } from '../src/storage/migrate.js';
import { splitStatements } from '../src/storage/statements.js';
import { copyAllToTeams } from '../src/teams/team-copies.js';
import { targetId } from '../src/domain/ids.js';
import { TEST_LAYOUT, testStoreConfig } from './support/engine.js';
import { report, V, worked } from './support/reports.js';
import { contextFromHistory, issueCountsFromFindings, snapshot, storedContext } from './support/snapshot.js';

/**
 * The migration runner on a store that already holds data: a migration with a backfill (0011, the
 * per-issue counters; 0012, what findings pages show) derives what was stored before it, keeps
 * deriving what comes after, and changes nothing when it runs again because the ledger row after
 * it was never written (a crash).
 *
 * "Stored before" is simulated: the data is ingested by today's code, then what the migration
 * under test creates is dropped with its ledger row, as if it had never run.
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
  for (const f of fs.readdirSync(SQL_DIR).filter((f) => Number(f.slice(0, 4)) <= last))
    fs.copyFileSync(path.join(SQL_DIR, f), path.join(dir, f));
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
  await rewriteTotals(store, new ProcessLocks());
}

const ROCKSDB_TABLES = ['finding_latest_events', 'finding_total_values', 'issue_objects', 'target_objects'];

/** The tables 0020 lets a background merge take whole once every part is a minute old. */
const FORCED_MERGE_TABLES = [
  'family_heads',
  'finding_counts',
  'finding_totals',
  'findings',
  'issue_finding_counts',
  'issues',
  'target_teams',
  'targets',
  'team_finding_counts',
  'team_findings',
];

/** What each migration under test creates, dropped to take the store back to before it. */
const CREATED: Record<number, string[]> = {
  11: ['DROP VIEW findings_to_issue_counts', 'DROP TABLE issue_finding_counts'],
  12: [
    'DROP VIEW finding_events_to_latest',
    'DROP VIEW finding_counts_to_totals',
    'DROP VIEW team_finding_counts_to_totals',
    'DROP TABLE finding_latest_events',
    'DROP TABLE issue_objects',
    'DROP TABLE target_objects',
    'DROP TABLE finding_totals',
    'ALTER TABLE finding_events DROP COLUMN became_latest',
  ],
  17: ['findings', 'team_findings'].flatMap((t) => [`ALTER TABLE ${t} DROP COLUMN fix_seconds`, `ALTER TABLE ${t} DROP COLUMN latest_at`]),
  18: ['DROP VIEW decision_revocations', 'ALTER TABLE finding_decisions DROP COLUMN replaces'],
  // The key-value tables' default again, and the team views' queries of 0009.
  19: [
    // The cluster layout has no EmbeddedRocksDB tables, and 0019 leaves their settings out there.
    ...(TEST_LAYOUT === 'single' ? ROCKSDB_TABLES : []).map((t) => `ALTER TABLE ${t} MODIFY SETTING optimize_for_bulk_insert = 1`),
    ...splitStatements(fs.readFileSync(path.join(SQL_DIR, '0009_team_copies.sql'), 'utf8')).flatMap((s) => {
      const view = /^CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+) TO \w+ AS\s+(SELECT[\s\S]*)$/.exec(s);
      return view ? [`ALTER TABLE ${view[1]} MODIFY QUERY ${view[2]}`] : [];
    }),
  ],
  20: FORCED_MERGE_TABLES.map((t) => `ALTER TABLE ${t} RESET SETTING min_age_to_force_merge_seconds`),
};

async function unapply(store: Store, version: number): Promise<void> {
  for (const statement of CREATED[version]!) await store.command(statement);
  await store.command(`DELETE FROM schema_migrations WHERE version = ${version}`);
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

/** A migrated store holding `before`, with b.example.com in team-b and copied to its rows. */
async function storedWithTeamB(): Promise<Store> {
  const store = await openEmpty();
  await migrate(store);
  await ingest(store, before);
  await store.insert('target_teams', [{ team: 'team-b', target_id: targetId('b.example.com'), associated_seq: 1 }]);
  await copyAllToTeams(store);
  return store;
}

describe('migrations on a store that holds data', () => {
  it('0011 counts the findings stored before it and those written after it', async () => {
    const store = await openEmpty();
    await migrate(store);
    await ingest(store, before);
    await unapply(store, 11);
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

  it('0012 derives what pages show from the history stored before it and keeps it after', async () => {
    const store = await storedWithTeamB();
    await rewriteTotals(store, new ProcessLocks());
    await unapply(store, 12);
    expect(await storedContext(store).catch(() => 'no tables')).toBe('no tables');

    expect(await migrate(store)).toEqual([12]);
    const backfilled = await storedContext(store);
    expect(backfilled).toEqual(await contextFromHistory(store));
    expect(backfilled.latest).toHaveLength(3); // V on www and on b, the admin panel on b
    expect(backfilled.targets.find((t) => t.identifier === 'b.example.com')?.teams).toEqual(['team-b']);
    expect(backfilled.totals).toEqual([
      { scope: 'all', open_n: 2, fixed_n: 1 },
      { scope: 'team:team-b', open_n: 2, fixed_n: 0 },
    ]);

    await ingest(store, after);
    const kept = await storedContext(store);
    expect(kept).toEqual(await contextFromHistory(store));
    expect(kept.totals).toEqual([
      { scope: 'all', open_n: 3, fixed_n: 1 },
      { scope: 'team:team-b', open_n: 1, fixed_n: 1 },
    ]);

    // A crash after the backfills and before the ledger row: the whole migration runs again.
    await store.command('DELETE FROM schema_migrations WHERE version = 12');
    expect(await migrate(store)).toEqual([12]);
    expect(await storedContext(store)).toEqual(kept);
  });

  it("0017 derives the closed periods' durations and the latest instant of the findings and team copies stored before it and after it", async () => {
    const store = await storedWithTeamB();
    await unapply(store, 17);
    expect(await migrate(store)).toEqual([17]);
    /** Every stored finding version's durations and latest instant, and the same counted from its periods here. */
    const durations = async (table: string) => {
      const rows = await store.query<{ found_at: string[]; fixed_at: string[]; fix_seconds: number[]; latest_at: string }>(
        `SELECT found_at, fixed_at, fix_seconds, latest_at FROM ${table} ORDER BY id, version`,
      );
      const open = (x: string) => x.startsWith('2106');
      const expected = rows.map((r) => ({
        fix_seconds: r.fixed_at.flatMap((x, i) => (open(x) ? [] : [(Date.parse(`${x}Z`) - Date.parse(`${r.found_at[i]}Z`)) / 1000])),
        latest_at: open(r.fixed_at.at(-1)!) ? r.found_at.at(-1) : r.fixed_at.at(-1),
      }));
      return { stored: rows.map((r) => ({ fix_seconds: r.fix_seconds, latest_at: r.latest_at })), expected };
    };
    for (const table of ['findings', 'team_findings']) {
      const { stored, expected } = await durations(table);
      expect(stored, table).toEqual(expected);
    }
    // www's V: found 01-01 10:00 (r1), fixed 01-03 10:00 (r3); nothing else closed yet.
    expect((await durations('findings')).stored.flatMap((r) => r.fix_seconds)).toEqual([172_800]);

    await ingest(store, after);
    for (const table of ['findings', 'team_findings']) {
      const { stored, expected } = await durations(table);
      expect(stored, table).toEqual(expected);
    }
    // V on b (found 01-01 12:00, fixed 01-04 12:00, b-2) is closed in team-b's copy too.
    expect((await durations('team_findings')).stored.flatMap((r) => r.fix_seconds)).toContain(3 * 86_400);
    expect((await durations('team_findings')).stored.map((r) => r.latest_at)).toContain('2024-01-04 12:00:00');

    await store.command('DELETE FROM schema_migrations WHERE version = 17');
    expect(await migrate(store)).toEqual([17]);
  });

  it('0018 keeps the revocations stored before it and adds those a replacing decision carries in its row', async () => {
    const store = await openEmpty();
    await migrate(store);
    await unapply(store, 18);
    const finding = randomUUID();
    const decision = (id: string, at: string) => ({
      id,
      finding_id: finding,
      target_id: randomUUID(),
      decision: 'false_positive',
      reason: 'r',
      by: 'alice',
      created_at: at,
      expires_at: null,
      fingerprint: '',
    });
    const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
    await store.insert('finding_decisions', [decision(first, '2024-01-01 00:00:00.000'), decision(second, '2024-01-02 00:00:00.000')]);
    await store.insert('finding_decision_revocations', [
      { decision_id: first, finding_id: finding, revoked_at: '2024-01-01 12:00:00.000', revoked_by: 'bob' },
    ]);
    expect(await migrate(store)).toEqual([18]);
    await store.insert('finding_decisions', [{ ...decision(third, '2024-01-03 00:00:00.000'), by: 'carol', replaces: [second] }]);
    const trail = await decisionTrail(store, finding);
    expect(trail.map((d) => [d.id, d.revoked_at, d.revoked_by])).toEqual([
      [third, null, null],
      [second, '2024-01-03T00:00:00Z', 'carol'],
      [first, '2024-01-01T12:00:00Z', 'bob'],
    ]);
  });

  it('0019 keeps the team copies, counters and key-value tables exact, written by the narrower views and into the memtables', async () => {
    const store = await storedWithTeamB();
    // What POST /targets writes besides the association (storedWithTeamB inserts only the association).
    await store.insert('target_objects', [{ id: targetId('b.example.com'), identifier: 'b.example.com', teams: ['team-b'] }]);
    await rewriteTotals(store, new ProcessLocks());
    await unapply(store, 19);
    const settings = () =>
      store.query<{ name: string; memtable: number }>(
        `SELECT name, toUInt8(create_table_query LIKE '%optimize_for_bulk_insert = 0%') AS memtable FROM system.tables
         WHERE database = {db:String} AND engine = 'EmbeddedRocksDB' ORDER BY name`,
        { db: store.database },
      );
    expect((await settings()).every((t) => t.memtable === 0)).toBe(true);
    expect(await migrate(store)).toEqual([19]);
    expect(await settings()).toEqual(TEST_LAYOUT === 'single' ? ROCKSDB_TABLES.map((name) => ({ name, memtable: 1 })) : []);
    const views = await store.query<{ q: string }>(
      `SELECT create_table_query AS q FROM system.tables WHERE database = {db:String}
       AND name IN ('findings_to_team_findings', 'finding_state_deltas_to_team_counts')`,
      { db: store.database },
    );
    expect(views).toHaveLength(2);
    for (const v of views) expect(v.q).toMatch(/WHERE target_id IN \(SELECT target_id FROM \w+\.(findings|finding_state_deltas)\)/);

    // c.example.com has no team: nothing of it may reach team-b's copies.
    await ingest(store, after);
    const teamRows = await store.query<{ team: string; target: string; n: number }>(
      `SELECT team, toString(target_id) AS target, count() AS n FROM team_findings FINAL GROUP BY team, target_id`,
    );
    expect(teamRows.map((r) => [r.team, r.target])).toEqual([['team-b', targetId('b.example.com')]]);
    const copied = await store.query(
      `SELECT team, toString(id) AS id, version, toString(status) AS status FROM team_findings FINAL ORDER BY id`,
    );
    const truth = await store.query(
      `SELECT t.team AS team, toString(f.id) AS id, f.version AS version, toString(f.status) AS status
       FROM findings AS f FINAL INNER JOIN (SELECT DISTINCT team, target_id FROM target_teams) AS t ON t.target_id = f.target_id
       ORDER BY id`,
    );
    expect(copied).toEqual(truth);
    const teamCounts = await store.query<{ open: number; fixed: number }>(
      `SELECT sum(open_critical + open_high + open_medium + open_low + open_informational) AS open,
              sum(fixed_critical + fixed_high + fixed_medium + fixed_low + fixed_informational) AS fixed
       FROM team_finding_counts WHERE team = 'team-b'`,
    );
    expect(teamCounts).toEqual([{ open: 1, fixed: 1 }]);
    const kept = await storedContext(store);
    expect(kept).toEqual(await contextFromHistory(store));
    expect(kept.totals).toEqual([
      { scope: 'all', open_n: 3, fixed_n: 1 },
      { scope: 'team:team-b', open_n: 1, fixed_n: 1 },
    ]);

    // Run again (a crash before its ledger row): the same settings and views.
    await store.command('DELETE FROM schema_migrations WHERE version = 19');
    expect(await migrate(store)).toEqual([19]);
    expect(await storedContext(store)).toEqual(kept);
  });

  it('0020 has a background merge take every part of the tables reads merge across, and the answers stay the same', async () => {
    const store = await storedWithTeamB();
    await store.insert('target_objects', [{ id: targetId('b.example.com'), identifier: 'b.example.com', teams: ['team-b'] }]);
    await unapply(store, 20);
    const forced = async (age: number) =>
      (
        await store.query<{ name: string }>(
          `SELECT name FROM system.tables WHERE database = {db:String}
           AND create_table_query LIKE {setting:String} ORDER BY name`,
          { db: store.database, setting: `%min_age_to_force_merge_seconds = ${age}%` },
        )
      ).map((t) => t.name);
    expect(await forced(60)).toEqual([]);
    expect(await migrate(store)).toEqual([20]);
    expect(await forced(60)).toEqual(FORCED_MERGE_TABLES);

    // The setting at work in this engine, with an age of one second instead of a minute: the
    // findings of three batches, three parts and more, become one part; the answers do not change.
    // Merges wait until the parts are counted: on a busy host a batch can take longer than the age.
    await store.command('SYSTEM STOP MERGES findings');
    await store.command('ALTER TABLE findings MODIFY SETTING min_age_to_force_merge_seconds = 1');
    for (const r of after) await ingest(store, [r]);
    const parts = async () =>
      (
        await store.query<{ n: number }>(
          `SELECT toUInt32(count()) AS n FROM system.parts WHERE database = {db:String} AND table = 'findings' AND active`,
          { db: store.database },
        )
      )[0]!.n;
    expect(await parts()).toBeGreaterThan(2);
    const answers = await storedContext(store);
    await store.command('SYSTEM START MERGES findings');
    const deadline = Date.now() + 90_000;
    while ((await parts()) > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(await parts()).toBe(1);
    expect(await storedContext(store)).toEqual(answers);
    expect(answers).toEqual(await contextFromHistory(store));
  }, 120_000);

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
