/**
 * npm run bench:backup -- --scale empty|100k|1m [--runs 3]
 *
 * Embedded-mode snapshots of a benchmark dataset (bench/lib/dataset.ts), as `vulndb backup` has
 * the service take them (src/backup/snapshot.ts): how long writers wait at the commit gate (the
 * tables' cloning), and how long each later phase takes — the checksums, the engine's BACKUP and
 * the key-value files, which the gate used to hold too, and the verification. Writes
 * bench/results/backup-<scale>.json. Each snapshot is deleted after its run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type SnapshotProgress, takeSnapshot } from '../src/backup/snapshot.js';
import { CommitGate } from '../src/locks/commit-gate.js';
import { createLogger } from '../src/log.js';
import { openStore } from '../src/storage/gateway.js';
import { migrate } from '../src/storage/migrate.js';
import { dataDirOf, openDataset, SCALES, type Scale } from './lib/dataset.js';
import { writeResults } from './lib/results.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1]! : fallback;
};
const scale = arg('--scale', '100k') as Scale | 'empty';
if (!(scale in SCALES) && scale !== 'empty') throw new Error(`--scale must be one of empty, ${Object.keys(SCALES).join(', ')}`);
const runs = Number(arg('--runs', '3'));

/** `empty`: the schema and no rows, the pause's floor (what it costs whatever the data). */
async function emptyStore() {
  const storePath = path.resolve('bench/.data/backup-empty/clickhouse');
  const store = await openStore({
    url: undefined,
    database: 'vulndb',
    user: 'default',
    password: '',
    embeddedPath: storePath,
    layout: 'single',
  });
  await migrate(store);
  return { dataset: { findings: 0, events: 0, reports: 0 }, store, dataDir: path.dirname(storePath) };
}
const { dataset, store, dataDir } = scale === 'empty' ? await emptyStore() : { ...(await openDataset(scale)), dataDir: dataDirOf(scale) };
const log = createLogger('warn');
const results: Record<string, number>[] = [];
for (let run = 0; run < runs; run++) {
  const dir = path.join(dataDir, `snapshot-${run}`);
  fs.rmSync(dir, { recursive: true, force: true });
  const started = performance.now();
  const ends: Partial<Record<SnapshotProgress['phase'], number>> = {};
  const manifest = await takeSnapshot({ store, gate: new CommitGate(), log }, dir, (p) => {
    ends[p.phase] = performance.now() - started;
  });
  const total = performance.now() - started;
  const at = (phase: SnapshotProgress['phase'], before: number) => Math.round((ends[phase] ?? before) - before);
  const freeze = ends.freeze ?? 0;
  const sums = at('sums', freeze);
  const backup = at('backup', ends.sums ?? freeze);
  const copies = at('copies', ends.backup ?? 0);
  const result = {
    pauseMs: manifest.pause_ms ?? 0,
    sumsMs: sums,
    backupMs: backup,
    copiesMs: copies,
    // What the gate held before the clones (sums, BACKUP and copies of the live tables), measured in this run on the clones.
    formerlyHeldMs: sums + backup + copies + (manifest.pause_ms ?? 0),
    verifyMs: Math.round(total - (ends.copies ?? ends.backup ?? 0)),
    totalMs: Math.round(total),
    bytes: manifest.bytes,
  };
  console.log(JSON.stringify({ run, ...result }));
  results.push(result);
  fs.rmSync(dir, { recursive: true, force: true });
}
await store.close();

const median = (key: string) => {
  const sorted = results.map((r) => r[key]!).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const summary = {
  date: new Date().toISOString(),
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg().map((l) => +l.toFixed(1)) },
  scale,
  findings: dataset.findings,
  events: dataset.events,
  reports: dataset.reports,
  runs: results,
  median: Object.fromEntries(Object.keys(results[0]!).map((k) => [k, median(k)])),
};
console.log(JSON.stringify(summary.median));
writeResults(`backup-${scale}`, summary);
