/**
 * Benchmark datasets: a synthetic history (bench/lib/synthetic.ts) replayed through the ingest
 * batcher into an embedded store under bench/.data/<scale>, with every target associated with one
 * of 20 teams (team 0, the "large team", holds 20% of the targets). Built once and reused; a
 * marker file records what the folder holds, and bench/results/replay-<scale>.json how long the
 * replay took.
 *
 *   100k: 8,000 targets × 25 scans = 200,000 reports → ~100k findings, 2M FOUND events
 *   1m:   80,000 targets × 25 scans = 2,000,000 reports → ~1M findings, 20M FOUND events
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { directBatchesInFlight } from '../../src/cli/import.js';
import { ReportBatcher } from '../../src/ingest/batcher.js';
import { ProcessLocks } from '../../src/locks/target-locks.js';
import { createLogger } from '../../src/log.js';
import type { StoreLayout } from '../../src/config.js';
import { openStore, type Store } from '../../src/storage/gateway.js';
import { migrate } from '../../src/storage/migrate.js';
import { targetId } from '../../src/domain/ids.js';
import { copyAllToTeams } from '../../src/teams/team-copies.js';
import { teamsOfSql } from '../../src/teams/associations.js';
import { rewriteTotals } from '../../src/ingest/totals.js';
import { targetName, teamName, teamOf } from './synthetic.js';
import { replayLines } from './replay-lines.js';
import { syntheticTexts } from './synthetic-texts.js';
import { writeResults } from './results.js';
import { ownedStore } from './owned-store.js';
import { copyDataset as copyDataDir } from './load-procs.js';
import { randomUUID } from 'node:crypto';

export const SCALES = {
  '100k': { targets: 8_000, scans: 25 },
  '1m': { targets: 80_000, scans: 25 },
} as const;
export type Scale = keyof typeof SCALES;

export const TEAMS = 20;
export const LARGE_TEAM = teamName(0);
export const SMALL_TEAM = teamName(7);

export interface Dataset {
  scale: Scale;
  dataDir: string;
  storePath: string;
  reports: number;
  findings: number;
  events: number;
}

export const dataDirOf = (scale: Scale) => path.resolve('bench/.data', scale);

const log = createLogger('warn');

/**
 * Replays the scale's history as `vulndb import --direct` would with the default settings (batches
 * of 4,000, as many in flight): JSON lines, generated in another thread, parsed here.
 */
async function build(store: Store, scale: Scale): Promise<{ reports: number; seconds: number }> {
  const { targets, scans } = SCALES[scale];
  const batchSize = 4000;
  const concurrency = directBatchesInFlight(1);
  const batcher = new ReportBatcher({
    store,
    ...(await ownedStore(store, log)),
    batchSize,
    waitMs: 20,
    concurrency,
    maxEventAgeDays: 0,
    log,
  });
  const started = performance.now();
  const reports = await replayLines(batcher, syntheticTexts({ targets, scans, churn: 0.01 }), concurrency * batchSize, (sent) => {
    if (sent % 100_000 === 0)
      console.log(`  dataset ${scale}: ${sent} reports (${Math.round(sent / ((performance.now() - started) / 1000))}/s)`);
  });
  return { reports, seconds: (performance.now() - started) / 1000 };
}

/**
 * Rewrites every target's object (sql/0012) from targets and target_teams, after associations
 * written in bulk straight into target_teams.
 */
async function describeAllTargets(store: Store): Promise<void> {
  await store.command(
    `INSERT INTO target_objects
     SELECT t.id, t.identifier, tt.teams
     FROM targets AS t FINAL
     LEFT JOIN (${teamsOfSql('all')}) AS tt ON tt.target = t.id`,
  );
}

async function associateTeams(store: Store, targets: number): Promise<void> {
  await store.command('TRUNCATE TABLE target_teams');
  await store.command('TRUNCATE TABLE team_findings');
  await store.command('TRUNCATE TABLE team_finding_counts');
  await store.command("DELETE FROM finding_totals WHERE scope != 'all'");
  const rows = Array.from({ length: targets }, (_, i) => ({
    team: teamName(teamOf(i, TEAMS)),
    target_id: targetId(targetName(i)),
    associated_seq: i,
  }));
  for (let i = 0; i < rows.length; i += 50_000) await store.insert('target_teams', rows.slice(i, i + 50_000));
  await copyAllToTeams(store);
  await describeAllTargets(store);
  await rewriteTotals(store, new ProcessLocks());
}

const KEY_VALUE_TABLES = { finding_latest_events: 'finding_id', issue_objects: 'id', target_objects: 'id', finding_total_values: 'scope' };

/** Stops merges (for the whole engine) and writes a second version of a tenth of each key-value table's keys. */
async function rewriteTenthOfKeys(store: Store): Promise<void> {
  await store.command('SYSTEM STOP MERGES');
  for (const [table, key] of Object.entries(KEY_VALUE_TABLES)) {
    await store.command(`INSERT INTO ${table} SELECT * FROM ${table} FINAL WHERE cityHash64(${key}) % 10 = 0`);
  }
}

/**
 * The cluster layout's copy of a built dataset: every table of `source` (the single layout's
 * database in the same folder) copied into the store's, with the materialized views detached so
 * that each table receives exactly its source's rows (a view would write its target a second time).
 * The key-value tables go from EmbeddedRocksDB into their ReplacingMergeTree forms as they are. The
 * same data as a replay in this layout, in minutes instead of the replay's hour at 1m.
 */
async function copyDataset(store: Store, source: string): Promise<void> {
  const tables = await store.query<{ name: string; engine: string }>(
    "SELECT name, engine FROM system.tables WHERE database = {db:String} AND name != 'schema_migrations'",
    { db: store.database },
  );
  const views = tables.filter((t) => t.engine === 'MaterializedView').map((t) => t.name);
  for (const view of views) await store.command(`DETACH TABLE ${view}`);
  try {
    for (const { name } of tables.filter((t) => t.engine.endsWith('MergeTree'))) {
      const columns = await store.query<{ name: string }>(
        `SELECT name FROM system.columns WHERE database = {db:String} AND table = {table:String}
         AND default_kind NOT IN ('MATERIALIZED', 'ALIAS', 'EPHEMERAL') ORDER BY position`,
        { db: store.database, table: name },
      );
      const list = columns.map((c) => c.name).join(', ');
      const started = performance.now();
      await store.command(`TRUNCATE TABLE ${name}`);
      await store.command(`INSERT INTO ${name} (${list}) SELECT ${list} FROM ${source}.${name}`);
      console.log(`  copied ${source}.${name} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  } finally {
    for (const view of views) await store.command(`ATTACH TABLE ${view}`);
  }
}

/**
 * Opens the dataset of a scale, building it first if its folder does not hold it yet. The cluster
 * layout (CLICKHOUSE_LAYOUT, docs/SCALING.md) has its own copy in another database of the same
 * folder (one engine per process), so both can be measured in one run: copied from the single
 * layout's database when that one is built (copyDataset), else built by the same replay.
 */
export async function openDataset(scale: Scale, layout: StoreLayout = 'single'): Promise<{ dataset: Dataset; store: Store }> {
  const dataDir = dataDirOf(scale);
  const storePath = path.join(dataDir, 'clickhouse');
  const cluster = layout === 'cluster';
  const marker = path.join(dataDir, cluster ? 'dataset-cluster.json' : 'dataset.json');
  const database = cluster ? 'vulndb_cluster' : 'vulndb';
  const store = await openStore({ url: undefined, database, user: 'default', password: '', embeddedPath: storePath, layout });
  await migrate(store);
  if (!fs.existsSync(marker)) {
    const { targets, scans } = SCALES[scale];
    console.log(`building the ${scale} dataset in ${dataDir} (${targets * scans} reports; once)`);
    const [existing] = await store.query<{ n: number }>('SELECT count() AS n FROM sources');
    const copied = cluster && fs.existsSync(path.join(dataDir, 'dataset.json'));
    if (copied) {
      const started = performance.now();
      await copyDataset(store, 'vulndb');
      console.log(`  dataset ${scale}: copied from the single layout in ${((performance.now() - started) / 60_000).toFixed(1)} min`);
    } else if ((existing?.n ?? 0) < targets * scans) {
      const replay = await build(store, scale);
      const result = {
        date: new Date().toISOString(),
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
        scale,
        reports: replay.reports,
        seconds: +replay.seconds.toFixed(1),
        minutes: +(replay.seconds / 60).toFixed(1),
        reportsPerSecond: Math.round(replay.reports / replay.seconds),
      };
      console.log(`  dataset ${scale}: replayed ${replay.reports} reports in ${result.minutes} min (${result.reportsPerSecond}/s)`);
      writeResults(`replay-${scale}`, result);
    }
    if (!copied) await associateTeams(store, targets);
    // Settle background merges so every run measures the same table layout (and none runs
    // during the measurement).
    for (const table of [
      'findings',
      'finding_events',
      'finding_counts',
      'finding_state_deltas',
      'target_teams',
      'team_findings',
      'team_finding_counts',
      'targets',
      'issues',
      'sources',
      'family_heads',
    ]) {
      await store.command(`OPTIMIZE TABLE ${table} FINAL`);
    }
    // Likewise the key-value tables of findings pages, which RocksDB compacts in the background
    // after a build's millions of overwrites (finding_latest_events: one per detection).
    for (const table of ['finding_latest_events', 'issue_objects', 'target_objects', 'finding_total_values']) {
      await store.command(`OPTIMIZE TABLE ${table}${cluster ? ' FINAL' : ''}`);
    }
    // The cluster layout's reads must collapse versions: a second part rewrites a tenth of each
    // key-value table's keys (same values), left unmerged.
    if (cluster) await rewriteTenthOfKeys(store);
    const [counts] = await store.query<{ reports: number; findings: number; events: number }>(
      `SELECT (SELECT count() FROM sources) AS reports, (SELECT count() FROM findings FINAL) AS findings,
              (SELECT count() FROM finding_events) AS events`,
    );
    fs.writeFileSync(marker, JSON.stringify({ scale, ...counts, built: new Date().toISOString() }, null, 2));
  }
  const info = JSON.parse(fs.readFileSync(marker, 'utf8')) as Omit<Dataset, 'dataDir' | 'storePath'>;
  return { dataset: { ...info, scale, dataDir, storePath }, store };
}

/**
 * The store of a fresh copy of a built dataset in the temporary folder (removed when the process
 * exits), migrated as the service would at start (the dataset may predate this tree's
 * migrations): what a benchmark that writes opens, so that the dataset itself stays as built.
 */
export async function openDatasetCopy(scale: Scale, name: string): Promise<Store> {
  const copyDir = path.join(os.tmpdir(), `vulndb-${name}-${scale}-${randomUUID().slice(0, 8)}`);
  copyDataDir(dataDirOf(scale), copyDir);
  process.on('exit', () => fs.rmSync(copyDir, { recursive: true, force: true }));
  const store = await openStore({
    url: undefined,
    database: 'vulndb',
    user: 'default',
    password: '',
    embeddedPath: path.join(copyDir, 'clickhouse'),
  });
  const migrated = await migrate(store);
  if (migrated.length > 0) console.log(`migrations applied to the copy: ${migrated.join(', ')}`);
  return store;
}
