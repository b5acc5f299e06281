/**
 * npm run bench:suppression-forms [-- --scale 1m --decisions 10000 --runs 21]
 *
 * What leaving suppressed findings out of a statistic costs the engine, form by form, on a dataset
 * with N active decisions (bench/lib/decisions.ts): each statement alone (no HTTP, no cache), in
 * alternation, median of the runs.
 * - `all`: the statement without suppression (what includeSuppressed=true runs);
 * - `subquery`: `id NOT IN` the rule's result read by a subquery (the form before the sets);
 * - `set`: `id NOT IN` a Set table of the findings suppressed at the instant (the service's form);
 * - `subtracted`: the statistic over all findings less the same statistic over a table holding the
 *   decided findings' rows (a form the service does not use: it needs a table kept in step with
 *   every findings insert; measured to know what it would buy).
 * Results: bench/results/suppression-forms-<scale>.json.
 */
import os from 'node:os';
import { decisionIntervals } from '../src/decisions/active.js';
import { Suppression } from '../src/decisions/suppression.js';
import { optionOf } from './lib/args.js';
import { LARGE_TEAM, openDataset, type Scale } from './lib/dataset.js';
import { removeDecisions, seedDecisions } from './lib/decisions.js';
import { writeResults } from './lib/results.js';
import { median } from './lib/median.js';
import { SEVERITIES } from '../src/domain/severity.js';

const arg = optionOf(process.argv.slice(2));
const SCALE = arg('scale', '1m') as Scale;
const DECISIONS = Number(arg('decisions', '10000'));
const RUNS = Number(arg('runs', '21'));

const { store } = await openDataset(SCALE);
const TABLES = { rule: 'bench_forms_rule', set: 'bench_forms_set', decided: 'bench_forms_decided' };
const dropAll = async () => {
  for (const t of Object.values(TABLES)) await store.command(`DROP TABLE IF EXISTS ${t}`);
};
await seedDecisions(store, new Suppression(store), DECISIONS);
await dropAll();
await store.command(`CREATE TABLE ${TABLES.rule} ENGINE = Memory AS ${decisionIntervals()}`);
const activeNow = 'since <= now() AND now() < until';
await store.command(`CREATE TABLE ${TABLES.set} (id UUID) ENGINE = Set SETTINGS persistent = 0`);
await store.command(`INSERT INTO ${TABLES.set} SELECT finding_id FROM ${TABLES.rule} WHERE ${activeNow}`);
await store.command(`CREATE TABLE ${TABLES.decided} AS findings`);
await store.command(`INSERT INTO ${TABLES.decided} SELECT * FROM findings FINAL WHERE id IN (SELECT finding_id FROM ${TABLES.rule})`);

const CONDITIONS = {
  subquery: `id NOT IN (SELECT finding_id FROM ${TABLES.rule} WHERE ${activeNow})`,
  set: `id NOT IN ${TABLES.set}`,
};

/** A statistic as keys and additive values over rows of `from` meeting `where`. */
interface Statistic {
  name: string;
  from: string;
  where: string;
  keys: string;
  values: string[];
  /** The same over the decided rows, where the statistic reads counters instead of rows. */
  rowsWhere?: string;
}
const teamTargets = 'target_id IN (SELECT target_id FROM target_teams WHERE team = {team:String})';
const STATISTICS: Statistic[] = [
  { name: 'open global (rows)', from: 'findings FINAL', where: "status = 'OPEN'", keys: 'severity', values: ['count()'] },
  {
    name: 'open team (rows)',
    from: 'team_findings FINAL',
    where: "team = {team:String} AND status = 'OPEN'",
    keys: 'severity',
    values: ['count()'],
    rowsWhere: `${teamTargets} AND status = 'OPEN'`,
  },
  { name: 'mttr global', from: 'findings FINAL', where: '1', keys: 'severity', values: ['sum(ttr_sum)', 'sum(ttr_count)'] },
  {
    name: 'mttr team',
    from: 'team_findings FINAL',
    where: 'team = {team:String}',
    keys: 'severity',
    values: ['sum(ttr_sum)', 'sum(ttr_count)'],
    rowsWhere: teamTargets,
  },
  {
    name: 'current exposure global',
    from: 'findings FINAL',
    where: "status = 'OPEN'",
    keys: 'intDiv(toInt64(now()) - toInt64(last_found_at), 3600)',
    values: ['count()'],
  },
  {
    name: 'per issue global',
    from: 'findings FINAL',
    where: '1',
    keys: 'issue_id',
    values: ["countIf(status = 'OPEN')", "countIf(status = 'FIXED')"],
  },
];

function statements(s: Statistic): Record<string, string> {
  const sums = (sign: string) => s.values.map((v, i) => `${sign}toInt64(${v}) AS v${i}`).join(', ');
  const grouped = (from: string, where: string, sign = '') => `SELECT ${s.keys} AS k, ${sums(sign)} FROM ${from} WHERE ${where} GROUP BY k`;
  return {
    all: grouped(s.from, s.where),
    subquery: grouped(s.from, `${s.where} AND ${CONDITIONS.subquery}`),
    set: grouped(s.from, `${s.where} AND ${CONDITIONS.set}`),
    subtracted: `SELECT k, ${s.values.map((_, i) => `sum(v${i})`).join(', ')} FROM (
      ${grouped(s.from, s.where)}
      UNION ALL
      ${grouped(`${TABLES.decided} FINAL`, `${s.rowsWhere ?? s.where} AND id IN ${TABLES.set}`, '-')}) GROUP BY k`,
  };
}

/** Current open counts from the counters (no suppression possible there), and less the decided rows. */
const counterSums = SEVERITIES.map((s) => `sum(open_${s}) AS ${s}`).join(', ');
const decidedOpen = (where: string) =>
  `SELECT ${SEVERITIES.map((s) => `-toInt64(countIf(severity = '${s}')) AS open_${s}`).join(', ')}
   FROM ${TABLES.decided} FINAL WHERE ${where} AND status = 'OPEN' AND id IN ${TABLES.set}`;
const COUNTERS: Record<string, Record<string, string>> = {
  'open global (counters)': {
    all: `SELECT ${counterSums} FROM finding_counts`,
    subtracted: `SELECT ${counterSums} FROM (SELECT ${SEVERITIES.map((s) => `open_${s}`).join(', ')} FROM finding_counts UNION ALL ${decidedOpen('1')})`,
  },
  'open team (counters)': {
    all: `SELECT ${counterSums} FROM team_finding_counts WHERE team = {team:String}`,
    subtracted: `SELECT ${counterSums} FROM (SELECT ${SEVERITIES.map((s) => `open_${s}`).join(', ')} FROM team_finding_counts WHERE team = {team:String} UNION ALL ${decidedOpen(teamTargets)})`,
  },
};

const params = { team: LARGE_TEAM };
const rows: { name: string; ms: Record<string, number>; ratio: Record<string, number> }[] = [];
const forms: [string, Record<string, string>][] = [
  ...STATISTICS.map((s) => [s.name, statements(s)] as [string, Record<string, string>]),
  ...Object.entries(COUNTERS),
];
for (const [name, byForm] of forms) {
  const times: Record<string, number[]> = {};
  for (let i = 0; i < RUNS; i++)
    for (const [form, sql] of Object.entries(byForm)) {
      const t0 = performance.now();
      await store.query(sql, params);
      (times[form] ??= []).push(performance.now() - t0);
    }
  const ms = Object.fromEntries(Object.entries(times).map(([f, ts]) => [f, Math.round(median(ts) * 100) / 100]));
  const ratio = Object.fromEntries(Object.entries(ms).map(([f, m]) => [f, Math.round((m / ms.all!) * 100) / 100]));
  rows.push({ name, ms, ratio });
  console.log(
    name.padEnd(26),
    Object.entries(ms)
      .map(([f, m]) => `${f} ${m.toFixed(2)} ms (×${ratio[f]!.toFixed(2)})`)
      .join('  '),
  );
}
await dropAll();
await removeDecisions(store);
const out = writeResults(`suppression-forms-${SCALE}`, {
  date: new Date().toISOString(),
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
  scale: SCALE,
  decisions: DECISIONS,
  runs: RUNS,
  rows,
});
console.log(`written to ${out.latest} and ${out.kept}`);
process.exit(0);
