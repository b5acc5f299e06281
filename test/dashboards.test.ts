import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ADMIN_TOKEN, METRICS_SECRET, fetchMetric } from './support/metrics.js';
import { freshStore } from './support/engine.js';
import {
  ROOT,
  datasourceOf,
  expandQuery,
  loadDashboards,
  panelsOf,
  promGroupings,
  promMatchers,
  promMetrics,
  type Expansion,
  type Selection,
} from './support/grafana.js';
import { reportTime } from './support/api.js';
import { report } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import type { Store } from '../src/storage/gateway.js';
import { findingId, issueId, targetId } from '../src/domain/ids.js';
import { DEFAULT_SLA_DAYS } from '../src/sla/policy.js';

/**
 * The Grafana dashboards and their provisioning. Every ClickHouse query of every dashboard runs on
 * the embedded engine with the plugin's macros and the team variable expanded for a fixed time
 * range (test/support/grafana.ts), on an empty database and on a six-month history replayed
 * through ingestion (POST /targets, POST /checks, the worker): no row is written by hand. The
 * headline panels are compared with the metrics API's answers for the same team and range, and
 * the weekly and daily series with values computed here from the replayed history.
 */

type Obj = Record<string, any>;
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const exists = (rel: string) => fs.existsSync(path.join(ROOT, rel));

const compose: Obj = parseYaml(read('docker-compose.yml'), { merge: true });
const services: Record<string, Obj> = compose.services;

function envOf(service: Obj): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) return Object.fromEntries(env.map((e: string) => [e.split('=')[0]!, e.split('=').slice(1).join('=')]));
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

function mountsOf(service: Obj): { source: string; target: string }[] {
  return (service.volumes ?? []).map((v: unknown) => {
    if (typeof v === 'object' && v !== null) return { source: String((v as Obj).source), target: String((v as Obj).target) };
    const [source, target] = String(v).split(':');
    return { source: source!, target: target! };
  });
}

const CLICKHOUSE = 'grafana-clickhouse-datasource';
const PROMETHEUS = 'prometheus';

const datasourceFiles = fs.readdirSync(path.join(ROOT, 'dashboards/provisioning/datasources')).filter((f) => /\.ya?ml$/.test(f));
const providerFiles = fs.readdirSync(path.join(ROOT, 'dashboards/provisioning/dashboards')).filter((f) => /\.ya?ml$/.test(f));
const datasources: Obj[] = datasourceFiles.flatMap((f) => parseYaml(read(`dashboards/provisioning/datasources/${f}`)).datasources);
const dashboards = loadDashboards();
const dashboard = (uid: string) => {
  const d = dashboards.find((x) => x.json.uid === uid);
  if (!d) throw new Error(`no dashboard ${uid}`);
  return d;
};

/** The metrics the service exports to Prometheus (prom-client), with their labels and label values. */
const PROM_METRICS: Record<string, string[]> = {
  vulndb_ingest_reports_total: ['outcome'],
  vulndb_queue_jobs: ['queue', 'state'],
  vulndb_ingest_lag_seconds_bucket: ['le'],
  vulndb_ingest_lag_seconds_sum: [],
  vulndb_ingest_lag_seconds_count: [],
  vulndb_ingest_batch_duration_seconds_bucket: ['le'],
  vulndb_ingest_batch_duration_seconds_sum: [],
  vulndb_ingest_batch_duration_seconds_count: [],
};
const PROM_LABEL_VALUES: Record<string, string[]> = {
  outcome: ['stored', 'duplicate', 'ignored', 'rejected', 'failed'],
  state: ['waiting', 'active', 'delayed', 'failed'],
  queue: ['checks', 'checks-bulk'],
};

describe('Grafana provisioning', () => {
  const grafana = services.grafana!;

  it('mounts the provisioning folder and the dashboards folder the provider reads', () => {
    expect(
      mountsOf(grafana)
        .find((m) => m.target === '/etc/grafana/provisioning')
        ?.source.replace(/^\.\//, ''),
    ).toBe('dashboards/provisioning');
    expect(providerFiles.length).toBeGreaterThan(0);
    const dashboardMounts = mountsOf(grafana).filter((m) => m.source.replace(/^\.\//, '').replace(/\/$/, '') === 'dashboards');
    for (const f of providerFiles) {
      const doc = parseYaml(read(`dashboards/provisioning/dashboards/${f}`));
      expect(doc.apiVersion).toBe(1);
      for (const provider of doc.providers) {
        expect(provider.type).toBe('file');
        expect(
          dashboardMounts.map((m) => m.target),
          `provider ${provider.name} path`,
        ).toContain(provider.options.path);
      }
    }
    const home = envOf(grafana).GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH;
    if (home) {
      const mount = dashboardMounts.find((m) => home.startsWith(`${m.target}/`));
      expect(mount).toBeDefined();
      expect(exists(path.join('dashboards', home.slice(mount!.target.length + 1)))).toBe(true);
    }
  });

  it('provisions one ClickHouse data source (the read-only user on the clickhouse service) and one Prometheus data source', () => {
    expect(datasources.map((d) => d.type).sort()).toEqual([CLICKHOUSE, PROMETHEUS]);
    expect(new Set(datasources.map((d) => d.uid)).size).toBe(datasources.length);
    const ds = datasources.find((d) => d.type === CLICKHOUSE)!;
    expect(ds.isDefault).toBe(true);
    // Grafana installs the plugin before it starts (GF_PLUGINS_PREINSTALL_SYNC; GF_INSTALL_PLUGINS is its deprecated name).
    const plugins = [envOf(grafana).GF_PLUGINS_PREINSTALL_SYNC, envOf(grafana).GF_INSTALL_PLUGINS]
      .join(',')
      .split(',')
      .map((p) => p.trim().split('@')[0]);
    expect(plugins).toContain(ds.type);
    expect(services[ds.jsonData.host]).toBeDefined();
    expect(ds.jsonData.port).toBe(8123);
    expect(ds.jsonData.protocol).toBe('http');
    expect(ds.jsonData.defaultDatabase).toBe(envOf(services.api!).CLICKHOUSE_DATABASE);
    const users = read('deploy/clickhouse/users.d/grafana.xml');
    expect(users).toContain(`<${ds.jsonData.username}>`);
    const passwordVar = /^\$\{?([A-Z0-9_]+)\}?$/.exec(ds.secureJsonData.password)?.[1];
    expect(passwordVar).toBeDefined();
    expect(users).toContain(`from_env="${passwordVar}"`);

    const prom = datasources.find((d) => d.type === PROMETHEUS)!;
    expect(prom.uid).toBe('prometheus');
    expect(prom.access).toBe('proxy');
    expect(prom.isDefault).not.toBe(true);
    const url = new URL(prom.url);
    expect(url.hostname).toBe('prometheus');
    expect(url.port).toBe('9090');
    expect(services[url.hostname], 'the Prometheus service of docker-compose.yml').toBeDefined();
  });

  it('has dashboards whose queries use a provisioned data source: SQL for ClickHouse, PromQL for Prometheus', () => {
    expect(dashboards.map((d) => d.json.uid).sort()).toEqual(['vulndb-ingestion', 'vulndb-overview']);
    const byUid = new Map(datasources.map((d) => [d.uid, d]));
    for (const { file, json } of dashboards) {
      const ids = panelsOf(json).map((p) => p.id);
      expect(new Set(ids).size, `${file}: panel ids are unique`).toBe(ids.length);
      for (const p of panelsOf(json).filter((p) => p.type !== 'row')) {
        expect(p.targets?.length, `${file}: panel "${p.title}" has a query`).toBeGreaterThan(0);
        expect(p.description, `${file}: panel "${p.title}" says what it shows`).toBeTruthy();
        for (const t of p.targets) {
          const ds = byUid.get(datasourceOf(p, t)?.uid);
          expect(ds, `${file}: "${p.title}" uses an unknown data source`).toBeDefined();
          expect(datasourceOf(p, t)?.type).toBe(ds!.type);
          if (ds!.type === CLICKHOUSE) {
            expect(t.editorType, `${file}: "${p.title}"`).toBe('sql');
            expect(typeof t.rawSql).toBe('string');
            expect([0, 1], `${file}: "${p.title}" format`).toContain(t.format);
            // A time series panel gets its rows as a time series (format 0); tables and bar charts as a table.
            expect(t.format, `${file}: "${p.title}" format`).toBe(p.type === 'timeseries' ? 0 : 1);
          } else {
            expect(typeof t.expr).toBe('string');
          }
        }
      }
      for (const v of json.templating?.list ?? []) {
        if (v.type === 'query') expect(byUid.get(v.datasource?.uid)?.type, `${file}: variable ${v.name}`).toBe(CLICKHOUSE);
      }
    }
  });
});

const clickhouseQueries = (json: Obj) =>
  panelsOf(json).flatMap((p) =>
    (p.targets ?? [])
      .filter((t: Obj) => datasourceOf(p, t)?.type === CLICKHOUSE)
      .map((t: Obj) => ({ panel: p, target: t, rawSql: t.rawSql as string })),
  );

describe('the overview dashboard', () => {
  const { json } = dashboard('vulndb-overview');

  it('has a multi-select team variable with All, applied to every panel', () => {
    const team = json.templating.list.find((v: Obj) => v.name === 'team');
    expect(team).toMatchObject({ type: 'query', multi: true, includeAll: true });
    expect(team.query.rawSql).toMatch(/\btarget_team_members\b/);
    for (const { panel, rawSql } of clickhouseQueries(json)) {
      expect(rawSql, `"${panel.title}" applies the team variable`).toMatch(
        /\$__conditionalAll\([\s\S]*\$\{team:singlequote\}[\s\S]*,\s*\$team\)/,
      );
    }
  });

  it("has an sla_days variable whose default is the service's default SLA_DAYS, used by the SLA panels", () => {
    const sla = json.templating.list.find((v: Obj) => v.name === 'sla_days');
    expect(sla).toMatchObject({ type: 'textbox', query: DEFAULT_SLA_DAYS });
    const slaPanels = clickhouseQueries(json).filter(({ rawSql }) => rawSql.includes('${sla_days:singlequote}'));
    expect(slaPanels.map((q) => q.panel.title).sort()).toEqual(['SLA breached now by severity and team', 'SLA compliance by month']);
    for (const { panel } of slaPanels) expect(panel.description).toMatch(/sla_days.*SLA_DAYS/);
  });

  it('computes every time series from the history within the time range, never from when a batch ran', () => {
    const series = clickhouseQueries(json).filter(({ panel }) => panel.type === 'timeseries' || panel.type === 'barchart');
    expect(series.map((s) => s.panel.title).sort()).toEqual([
      'MTTR by month and severity (hours)',
      'Open findings over time by severity',
      'Opened vs fixed per week',
      'SLA compliance by month',
    ]);
    for (const { panel, rawSql } of series) {
      expect(rawSql, `"${panel.title}" uses the time range`).toMatch(/\$__timeFilter\(|\$__fromTime\b/);
      expect(rawSql, `"${panel.title}" reads OPEN periods`).toMatch(/\bfound_at\b/);
    }
    for (const { panel, rawSql } of clickhouseQueries(json)) {
      expect(rawSql, `"${panel.title}" reads a batch wall clock`).not.toMatch(/finding_state_deltas|changed_at|updated_at/);
    }
  });
});

describe('the ingestion dashboard', () => {
  const { json } = dashboard('vulndb-ingestion');

  it('asks Prometheus only for metrics, labels and label values the service exports', () => {
    const prom = panelsOf(json).flatMap((p) =>
      (p.targets ?? []).filter((t: Obj) => datasourceOf(p, t)?.type === PROMETHEUS).map((t: Obj) => ({ p, expr: t.expr as string })),
    );
    expect(prom.length).toBeGreaterThanOrEqual(4);
    const used = new Set<string>();
    for (const { p, expr } of prom) {
      const metrics = promMetrics(expr);
      expect(metrics.length, `"${p.title}": ${expr}`).toBeGreaterThan(0);
      for (const m of metrics) {
        expect(Object.keys(PROM_METRICS), `"${p.title}": ${expr}`).toContain(m);
        used.add(m.replace(/_(bucket|sum|count)$/, ''));
      }
      const labels = new Set(metrics.flatMap((m) => PROM_METRICS[m]!));
      for (const [label, op, value] of promMatchers(expr)) {
        expect([...labels], `"${p.title}": label ${label}`).toContain(label);
        const allowed = PROM_LABEL_VALUES[label];
        if (allowed) {
          const values = op === '=~' || op === '!~' ? value.split('|') : [value];
          for (const v of values) expect(allowed, `"${p.title}": ${label}=${v}`).toContain(v);
        }
      }
      for (const label of promGroupings(expr)) expect([...labels], `"${p.title}": by ${label}`).toContain(label);
    }
    expect([...used].sort()).toEqual([
      'vulndb_ingest_batch_duration_seconds',
      'vulndb_ingest_lag_seconds',
      'vulndb_ingest_reports_total',
      'vulndb_queue_jobs',
    ]);
    // When the service's sources name these metrics (prom-client), they are the same names.
    const srcText = walk('src').map(read).join('\n');
    if (/vulndb_ingest_reports_total/.test(srcText)) {
      for (const name of used) expect(srcText, `src/ registers ${name}`).toContain(name);
    }
  });

  it('says that reports are counted at their source time (sources keeps no stored-at time)', () => {
    const columns = read('sql/0003_sources.sql');
    expect(columns).not.toMatch(/stored_at|ingested_at|created_at/);
    const perHour = panelsOf(json).find((p) => p.title.startsWith('Reports per hour'))!;
    expect(perHour.title).toMatch(/source time/);
    expect(perHour.description).toMatch(/source time/);
  });
});

function walk(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    return e.isDirectory() ? walk(rel) : /\.ts$/.test(e.name) ? [rel] : [];
  });
}

// ---------------------------------------------------------------------------------------------
// Queries on the engine

const DAY = 86400;
const HOUR = 3600;
const at = (iso: string) => Date.parse(iso) / 1000;

async function runPanels(store: Store, json: Obj, e: Expansion): Promise<Map<string, Obj[]>> {
  const out = new Map<string, Obj[]>();
  const queries = [
    ...clickhouseQueries(json).map(({ panel, rawSql }) => ({ where: panel.title as string, rawSql })),
    ...(json.templating?.list ?? [])
      .filter((v: Obj) => v.type === 'query')
      .map((v: Obj) => ({ where: `variable ${v.name}`, rawSql: v.query.rawSql as string })),
  ];
  for (const q of queries) {
    let sql: string;
    try {
      sql = expandQuery(q.rawSql, { ...e, vars: { ...textboxDefaults(json), ...e.vars } });
    } catch (err) {
      throw new Error(`${json.uid}: "${q.where}": ${(err as Error).message}`);
    }
    try {
      out.set(q.where, await store.query<Obj>(sql));
    } catch (err) {
      throw new Error(`${json.uid}: "${q.where}" fails with ${JSON.stringify(e)}: ${(err as Error).message}\n${sql}`);
    }
  }
  return out;
}

/** A textbox variable (e.g. sla_days) holds its default unless a test sets it. */
const textboxDefaults = (json: Obj): Record<string, Selection> =>
  Object.fromEntries(
    (json.templating?.list ?? []).filter((v: Obj) => v.type === 'textbox').map((v: Obj) => [v.name, some(String(v.query))]),
  );

const panel = (results: Map<string, Obj[]>, title: string) => {
  const rows = results.get(title);
  if (!rows) throw new Error(`no panel titled ${title}: ${[...results.keys()].join(', ')}`);
  return rows;
};

const all = (values: string[] = ['team-x']): Selection => ({ all: true, values });
const some = (...values: string[]): Selection => ({ all: false, values });

describe('dashboard queries on an empty database', () => {
  it('run for every kind of team selection', async () => {
    const store = await freshStore();
    const now = Math.floor(Date.now() / 1000);
    for (const team of [all(), some('team-a'), some('team-a', "o'brien")]) {
      for (const { json } of dashboards) {
        const results = await runPanels(store, json, { from: now - 30 * DAY, to: now, intervalS: HOUR, vars: { team } });
        if (json.uid === 'vulndb-overview') {
          // A point at every whole hour of the range, up to now.
          const first = Math.ceil((now - 30 * DAY) / HOUR) * HOUR;
          expect(panel(results, 'Open findings over time by severity').length).toBe(Math.floor((now - first) / HOUR) + 1);
          expect(panel(results, 'Opened vs fixed per week').every((r) => r.opened === 0 && r.fixed === 0)).toBe(true);
        }
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// A replayed history

/** mulberry32: a small deterministic generator, so the history is the same on every run. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Severity = 'critical' | 'high' | 'medium' | 'low' | 'informational';
const SEVERITIES: Severity[] = ['critical', 'high', 'medium', 'low', 'informational'];
const severityOf = (s: number): Severity => (s === 0 ? 'informational' : s < 4 ? 'low' : s < 7 ? 'medium' : s < 9 ? 'high' : 'critical');

const TEAM_A = '0a0a0a0a-0000-4000-8000-00000000000a';
const TEAM_B = '0b0b0b0b-0000-4000-8000-00000000000b';
const TARGETS: Record<string, string[]> = {
  'a1.example.com': [TEAM_A],
  'a2.example.com': [TEAM_A],
  'b1.example.com': [TEAM_B],
  'shared.example.com': [TEAM_A, TEAM_B],
  'orphan.example.com': [],
};
/** Each check type reports its own vulnerabilities (so a finding has one detecting family). */
const CHECKS: Record<string, { summary: string; score: number }[]> = {
  'vulcan-tls': [
    { summary: 'TLS heartbeat over-read', score: 9.8 },
    { summary: 'TLS 1.0 accepted', score: 7.5 },
    { summary: 'Weak TLS cipher suites', score: 5.0 },
    { summary: 'TLS certificate expires soon', score: 2.0 },
  ],
  'vulcan-nessus': [
    { summary: 'Remote code execution in web server', score: 9.1 },
    { summary: 'Outdated OpenSSH', score: 8.0 },
    { summary: 'Service banner disclosure', score: 0 },
    { summary: 'Directory listing enabled', score: 4.5 },
  ],
  'vulcan-zap': [
    { summary: 'Reflected cross-site scripting', score: 7.1 },
    { summary: 'Missing content security policy', score: 6.0 },
    { summary: 'Cookie without Secure flag', score: 3.0 },
    { summary: 'SQL injection in login form', score: 9.5 },
  ],
};

/** The service's clock and the end of the dashboard range: history runs from mid-March to the end of October 2026. */
const NOW = at('2026-11-01T00:00:00Z');
const FROM = at('2026-05-01T00:00:00Z');
const HISTORY_START = at('2026-03-16T00:00:00Z');
const HISTORY_END = at('2026-10-30T00:00:00Z');

interface Period {
  /** The finding: target and vulnerability. */
  key: string;
  target: string;
  teams: string[];
  severity: Severity;
  found: number;
  fixed: number | null;
}

/** Scans every 5 days (a few hours apart per check type), each vulnerability coming and going as a Markov chain. */
function history() {
  const rand = prng(20261101);
  const reports: Record<string, unknown>[] = [];
  const periods: Period[] = [];
  let n = 0;
  for (const [target, teams] of Object.entries(TARGETS)) {
    for (const [check, vulns] of Object.entries(CHECKS)) {
      const present = vulns.map(() => rand() < 0.4);
      const open: (number | null)[] = vulns.map(() => null);
      const offset = Math.floor((rand() * 5 * DAY) / HOUR) * HOUR + Math.floor(rand() * 3600);
      for (let t = HISTORY_START + offset; t <= HISTORY_END; t += 5 * DAY) {
        for (let i = 0; i < vulns.length; i++) present[i] = present[i] ? rand() >= 0.3 : rand() < 0.2;
        reports.push(
          report({
            check_id: `dash-${String(++n).padStart(5, '0')}`,
            target,
            checktype_name: check,
            end_time: reportTime(t),
            vulnerabilities: vulns
              .filter((_, i) => present[i])
              .map((v) => ({ summary: v.summary, score: v.score, description: v.summary })),
          }),
        );
        // SPEC §3.5: a report with the vulnerability opens a period if none is open; one without it closes the open one.
        for (let i = 0; i < vulns.length; i++) {
          if (present[i] && open[i] === null) open[i] = t;
          else if (!present[i] && open[i] !== null) {
            periods.push({
              key: `${target} ${vulns[i]!.summary}`,
              target,
              teams,
              severity: severityOf(vulns[i]!.score),
              found: open[i]!,
              fixed: t,
            });
            open[i] = null;
          }
        }
      }
      for (let i = 0; i < vulns.length; i++) {
        if (open[i] !== null)
          periods.push({
            key: `${target} ${vulns[i]!.summary}`,
            target,
            teams,
            severity: severityOf(vulns[i]!.score),
            found: open[i]!,
            fixed: null,
          });
      }
    }
  }
  return { reports, periods };
}

const monday = (t: number) => {
  const d = Math.floor(t / DAY);
  const weekday = (d + 3) % 7; // 1970-01-01 was a Thursday: 0 = Monday
  return (d - weekday) * DAY;
};
const iso = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const dbTime = (t: number) => iso(t).replace('T', ' ').replace('Z', '');

describe('dashboard queries on a replayed history', () => {
  let svc: TestService;
  let store: Store;
  const { reports, periods } = history();
  const inTeams = (p: Period, teams: string[] | 'all') => teams === 'all' || p.teams.some((t) => teams.includes(t));
  const expansion = (teams: string[] | 'all', intervalS = DAY, from = FROM, to = NOW): Expansion => ({
    from,
    to,
    intervalS,
    vars: { team: teams === 'all' ? all([TEAM_A, TEAM_B]) : some(...teams) },
  });
  const SELECTIONS: { teams: string[] | 'all'; metric: (p: string, q?: string) => string }[] = [
    { teams: [TEAM_A], metric: (p, q = '') => `teams/${TEAM_A}/stats/${p}${q ? `?${q}` : ''}` },
    { teams: [TEAM_B], metric: (p, q = '') => `teams/${TEAM_B}/stats/${p}${q ? `?${q}` : ''}` },
    { teams: [TEAM_A, TEAM_B], metric: (p, q = '') => `stats/${p}?teams=${TEAM_A},${TEAM_B}${q ? `&${q}` : ''}` },
    { teams: 'all', metric: (p, q = '') => `stats/${p}${q ? `?${q}` : ''}` },
  ];
  const metric = async (path: string) => {
    const res = await fetchMetric(svc.metricsApiUrl!, path, ADMIN_TOKEN);
    expect(res.status, path).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    svc = await startTestService({ now: () => NOW, env: { JWT_SECRET: METRICS_SECRET } });
    store = svc.store;
    for (const [identifier, teams] of Object.entries(TARGETS)) {
      if (teams.length > 0) await json(svc.postJson('/targets', { identifier, teams }), 201);
    }
    // Posted in parallel runs of 25: arrival order differs from source order, which ingestion must not care about.
    for (let i = 0; i < reports.length; i += 25) {
      await Promise.all(reports.slice(i, i + 25).map((r) => json(svc.postJson('/checks', r), 202)));
    }
    await svc.settle(120_000);
  }, 180_000);

  afterAll(async () => {
    await svc?.close();
  });

  it('replays a history with opens, fixes and reopens for two teams over several months', async () => {
    const reopened = periods.filter((p) => periods.some((q) => q.key === p.key && q.fixed !== null && q.fixed <= p.found));
    expect(reports.length).toBeGreaterThan(400);
    expect(periods.filter((p) => p.fixed !== null).length).toBeGreaterThan(100);
    expect(reopened.length).toBeGreaterThan(20);
    const [sources] = await store.query<{ n: number }>('SELECT count() AS n FROM sources');
    expect(sources?.n).toBe(reports.length);
    const [stored] = await store.query<{ periods: number }>('SELECT sum(length(found_at)) AS periods FROM findings FINAL');
    expect(stored?.periods).toBe(periods.length);
  });

  it('fills the team variable with the associated teams', async () => {
    const results = await runPanels(store, dashboard('vulndb-overview').json, expansion('all'));
    expect(panel(results, 'variable team').map((r) => r.team)).toEqual([TEAM_A, TEAM_B]);
  });

  it('counts open findings now by severity as GET .../stats/open does, for each team selection', async () => {
    for (const { teams, metric: path } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const [row] = panel(results, 'Open findings now by severity');
      const api = (await metric(path('open'))).open_issues;
      expect(Object.fromEntries(SEVERITIES.map((s) => [s, Number(row![s])])), JSON.stringify(teams)).toEqual(api);
      const expected = Object.fromEntries(
        SEVERITIES.map((s) => [s, periods.filter((p) => p.fixed === null && p.severity === s && inTeams(p, teams)).length]),
      );
      expect(api).toEqual(expected);
    }
  });

  it('counts the OPEN periods started and ended in each week of the range, as computed from the replayed history', async () => {
    for (const { teams } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const rows = panel(results, 'Opened vs fixed per week').map((r) => ({
        week: r.time,
        opened: Number(r.opened),
        fixed: Number(r.fixed),
      }));
      const expected = new Map<string, { opened: number; fixed: number }>();
      for (let w = monday(FROM); w <= monday(NOW); w += 7 * DAY) expected.set(dbTime(w), { opened: 0, fixed: 0 });
      for (const p of periods.filter((p) => inTeams(p, teams))) {
        if (p.found >= FROM && p.found <= NOW) expected.get(dbTime(monday(p.found)))!.opened++;
        if (p.fixed !== null && p.fixed >= FROM && p.fixed <= NOW) expected.get(dbTime(monday(p.fixed)))!.fixed++;
      }
      expect(rows, JSON.stringify(teams)).toEqual([...expected].map(([week, v]) => ({ week, ...v })));
      expect(rows.reduce((s, r) => s + r.opened + r.fixed, 0)).toBeGreaterThan(20);
    }
  });

  it('draws the findings OPEN at each daily point of the range by severity, as the history says and as GET .../stats/open?atDate answers', async () => {
    for (const { teams, metric: path } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const rows = panel(results, 'Open findings over time by severity');
      const days = (NOW - FROM) / DAY + 1;
      expect(rows.map((r) => r.time)).toEqual(Array.from({ length: days }, (_, k) => dbTime(FROM + k * DAY)));
      for (const r of rows) {
        const t = Date.parse(`${r.time}Z`) / 1000;
        const open = (s: Severity) =>
          periods.filter((p) => p.severity === s && inTeams(p, teams) && p.found <= t && (p.fixed === null || t < p.fixed)).length;
        expect(Object.fromEntries(SEVERITIES.map((s) => [s, Number(r[s])])), `${r.time} ${JSON.stringify(teams)}`).toEqual(
          Object.fromEntries(SEVERITIES.map((s) => [s, open(s)])),
        );
      }
      // SPEC §4.1: atDate=D is D 00:00:00Z, the instant of the day's point.
      for (const k of [0, 31, 77, 150, days - 1]) {
        const r = rows[k]!;
        const api = (await metric(path('open', `atDate=${String(r.time).slice(0, 10)}`))).open_issues;
        expect(Object.fromEntries(SEVERITIES.map((s) => [s, Number(r[s])])), `${r.time} ${JSON.stringify(teams)}`).toEqual(api);
      }
    }
  });

  it('gives the MTTR of each month as GET .../stats/mttr?minDate&maxDate of that month does', async () => {
    for (const { teams, metric: path } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const rows = panel(results, 'MTTR by month and severity (hours)');
      expect(rows.map((r) => String(r.time).slice(0, 7))).toEqual(['2026-05', '2026-06', '2026-07', '2026-08', '2026-09', '2026-10']);
      expect(rows.every((r) => Number(r.total) > 0)).toBe(true);
      for (const r of rows) {
        const month = String(r.time).slice(0, 7);
        const last = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 0)).toISOString().slice(0, 10);
        const api = (await metric(path('mttr', `minDate=${month}-01&maxDate=${last}`))).mttr;
        const panelValues = Object.fromEntries(['total', ...SEVERITIES].map((k) => [k, r[k] === null ? 0 : Number(r[k])]));
        for (const k of Object.keys(api)) expect(panelValues[k], `${month} ${k} ${JSON.stringify(teams)}`).toBeCloseTo(api[k], 2);
        const fixed = periods.filter((p) => inTeams(p, teams) && p.fixed !== null && iso(p.fixed).startsWith(month));
        expect(Number(r.fixed_periods)).toBe(fixed.length);
        for (const s of SEVERITIES)
          if (!fixed.some((p) => p.severity === s)) expect(r[s], `${month} ${s}: no sample is no value`).toBeNull();
      }
    }
  });

  it('gives the current-exposure percentiles of GET .../stats/exposure/current at the end of the range', async () => {
    for (const { teams, metric: path } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const rows = panel(results, 'Current exposure of open findings (hours)');
      const api = (await metric(path('exposure/current'))).current_exposure;
      const allRow = rows.find((r) => r.scope === 'all')!;
      const fromPanel = {
        percentile_10: allRow.p10,
        percentile_25: allRow.p25,
        percentile_50: allRow.p50,
        percentile_75: allRow.p75,
        percentile_90: allRow.p90,
        mean: allRow.mean,
      };
      expect(api.percentile_90).toBeGreaterThan(api.percentile_10);
      for (const k of Object.keys(api))
        expect(Number(fromPanel[k as keyof typeof fromPanel]), `${k} ${JSON.stringify(teams)}`).toBeCloseTo(api[k], 2);
      const open = periods.filter((p) => p.fixed === null && inTeams(p, teams));
      expect(Number(allRow.open_findings)).toBe(open.length);
      for (const s of SEVERITIES) {
        const n = open.filter((p) => p.severity === s).length;
        expect(rows.find((r) => r.scope === s)?.open_findings ?? 0).toBe(n);
      }
      // A past range ends at its own end: the percentiles of GET .../stats/exposure/current?atDate=<that day>.
      const end = at('2026-08-15T00:00:00Z');
      const past = panel(
        await runPanels(store, dashboard('vulndb-overview').json, expansion(teams, DAY, FROM, end)),
        'Current exposure of open findings (hours)',
      );
      const pastApi = (await metric(path('exposure/current', 'atDate=2026-08-15'))).current_exposure;
      const pastAll = past.find((r) => r.scope === 'all')!;
      expect(Number(pastAll.p50)).toBeCloseTo(pastApi.percentile_50, 2);
      expect(Number(pastAll.mean)).toBeCloseTo(pastApi.mean, 2);
    }
  });

  it('lists the oldest open critical and high findings, top issues and most exposed targets of the selected teams', async () => {
    for (const { teams } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const open = periods.filter((p) => p.fixed === null && inTeams(p, teams));
      const oldest = panel(results, 'Oldest open critical and high findings');
      const expectedOldest = open.filter((p) => p.severity === 'critical' || p.severity === 'high').sort((a, b) => a.found - b.found);
      expect(oldest.length).toBe(Math.min(25, expectedOldest.length));
      expect(oldest.map((r) => r.open_since)).toEqual(expectedOldest.slice(0, 25).map((p) => dbTime(p.found)));
      for (const r of oldest) {
        expect(Object.keys(TARGETS)).toContain(r.target);
        expect(r.issue).toBeTruthy();
        expect(Number(r.age_days)).toBe(Math.floor((NOW - Date.parse(`${r.open_since}Z`) / 1000) / DAY));
      }
      const top = panel(results, 'Top 10 issues by open findings');
      expect(top.reduce((s, r) => s + Number(r.open_findings), 0)).toBeLessThanOrEqual(open.length);
      expect(top.length).toBeGreaterThan(0);
      const targets = panel(results, 'Most exposed targets');
      expect(targets.map((r) => r.target).sort()).toEqual([...new Set(open.map((p) => p.target))].sort());
      for (const r of targets) expect(Number(r.open_findings)).toBe(open.filter((p) => p.target === r.target).length);
      const perTeam = panel(results, 'Findings per team (now)');
      expect(perTeam.map((r) => r.team).sort()).toEqual(teams === 'all' ? [TEAM_A, TEAM_B] : [...teams].sort());
    }
  });

  it('counts reports by check type and hour of their source time, and the last report of each check type', async () => {
    const results = await runPanels(store, dashboard('vulndb-ingestion').json, expansion('all', HOUR));
    const perHour = panel(results, 'Reports per hour by check type (source time)');
    const inRange = reports.filter((r) => at(`${String(r.end_time).replace(' ', 'T')}Z`) >= FROM);
    expect(perHour.reduce((s, r) => s + Number(r.reports_per_hour), 0)).toBe(inRange.length);
    for (const r of perHour.slice(0, 20)) {
      const hour = Date.parse(`${r.time}Z`) / 1000;
      const n = inRange.filter(
        (x) => x.checktype_name === r.check_type && Math.floor(at(`${String(x.end_time).replace(' ', 'T')}Z`) / HOUR) * HOUR === hour,
      ).length;
      expect(Number(r.reports_per_hour)).toBe(n);
    }
    const last = panel(results, 'Last report per check type');
    expect(last.map((r) => r.check_type).sort()).toEqual(Object.keys(CHECKS).sort());
    for (const r of last) {
      const own = reports
        .filter((x) => x.checktype_name === r.check_type)
        .map((x) => String(x.end_time))
        .sort();
      expect(r.last_report).toBe(own[own.length - 1]);
      expect(Number(r.reports_stored)).toBe(own.length);
    }
    // The batches ran just now (wall clock): their state changes are in a range around the present.
    const wall = Math.floor(Date.now() / 1000);
    const recent = await runPanels(store, dashboard('vulndb-ingestion').json, { ...expansion('all', 60, wall - HOUR, wall + 60) });
    expect(panel(recent, 'Finding state changes committed (wall clock)').reduce((s, r) => s + Number(r.state_changes), 0)).toBeGreaterThan(
      0,
    );
  });

  /** SPEC §10's default SLA_DAYS, which the dashboard's sla_days variable holds by default. */
  const SLA_DAYS: Partial<Record<Severity, number>> = { critical: 7, high: 30, medium: 90, low: 180 };
  const breachedAt = (p: Period, t: number) =>
    SLA_DAYS[p.severity] !== undefined && p.found <= t && (p.fixed === null || t < p.fixed) && t >= p.found + SLA_DAYS[p.severity]! * DAY;
  const NO_TEAM = '(no team)';
  const inTeam = (p: Period, team: string) => (team === NO_TEAM ? p.teams.length === 0 : p.teams.includes(team));

  it('counts the findings past their SLA now by team and severity, as the history says and as GET .../teams/{team}/stats/sla does', async () => {
    for (const { teams } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const rows = panel(results, 'SLA breached now by severity and team');
      const shown = teams === 'all' ? [TEAM_A, TEAM_B, NO_TEAM] : teams;
      // A team appears when it has a breached finding.
      const breachedOf = (team: string) =>
        Object.fromEntries(
          SEVERITIES.map((s) => [s, periods.filter((p) => p.severity === s && inTeam(p, team) && breachedAt(p, NOW)).length]),
        );
      const total = (bySeverity: Record<string, number>) => Object.values(bySeverity).reduce((a, b) => a + b, 0);
      expect(rows.map((r) => r.team).sort(), JSON.stringify(teams)).toEqual(shown.filter((t) => total(breachedOf(t)) > 0).sort());
      for (const team of shown) {
        const row = rows.find((r) => r.team === team);
        const fromPanel = Object.fromEntries(SEVERITIES.map((s) => [s, Number(row?.[s] ?? 0)]));
        expect(fromPanel, team).toEqual(breachedOf(team));
        expect(Number(row?.breached ?? 0)).toBe(total(breachedOf(team)));
        expect(Number(row?.breached_suppressed ?? 0)).toBe(0);
        if (team !== NO_TEAM) {
          const { total: apiTotal, ...api } = (await metric(`teams/${team}/stats/sla`)).sla.breached;
          expect(fromPanel, team).toEqual(api);
          expect(Number(row?.breached ?? 0)).toBe(apiTotal);
        }
      }
      if (teams === 'all') expect(rows.length).toBeGreaterThan(0);
    }
  });

  it('gives the SLA compliance of each month as GET .../stats/sla?minDate&maxDate of that month does', async () => {
    for (const { teams, metric: path } of SELECTIONS) {
      const results = await runPanels(store, dashboard('vulndb-overview').json, expansion(teams));
      const rows = panel(results, 'SLA compliance by month');
      expect(rows.map((r) => String(r.time).slice(0, 7))).toEqual(['2026-05', '2026-06', '2026-07', '2026-08', '2026-09', '2026-10']);
      for (const r of rows) {
        const month = String(r.time).slice(0, 7);
        const last = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)), 0)).toISOString().slice(0, 10);
        const api = (await metric(path('sla', `minDate=${month}-01&maxDate=${last}`))).sla;
        for (const k of ['total', ...SEVERITIES]) {
          if (api.compliance[k] === null) expect(r[k], `${month} ${k} ${JSON.stringify(teams)}`).toBeNull();
          else expect(Number(r[k]), `${month} ${k} ${JSON.stringify(teams)}`).toBeCloseTo(api.compliance[k], 4);
        }
        const fixed = periods.filter(
          (p) => inTeams(p, teams) && p.fixed !== null && iso(p.fixed).startsWith(month) && SLA_DAYS[p.severity] !== undefined,
        );
        const within = fixed.filter((p) => p.fixed! - p.found <= SLA_DAYS[p.severity]! * DAY);
        expect([Number(r.fixed_periods), Number(r.fixed_within)]).toEqual([fixed.length, within.length]);
        expect([api.fixed_within.total]).toEqual([within.length]);
      }
      expect(rows.some((r) => Number(r.total) < 1) && rows.some((r) => Number(r.fixed_within) > 0)).toBe(true);
    }
  });

  it('shows a finding under a triage decision as such: in the oldest open findings and apart from the breached counts', async () => {
    // Decisions are made at the wall clock: the range ends just after it.
    const wall = Math.floor(Date.now() / 1000);
    const range = expansion('all', DAY, FROM, wall + 60);
    const before = await runPanels(store, dashboard('vulndb-overview').json, range);
    const oldest = panel(before, 'Oldest open critical and high findings');
    expect(oldest.length).toBeGreaterThan(1);
    expect(oldest.every((r) => r.decision === 'none')).toBe(true);
    const chosen = oldest[0]!;
    const target = String(chosen.target);
    const id = findingId(targetId(target), issueId(chosen.issue, chosen.issue), target);
    const decisionUrl = `${svc.metricsApiUrl}/api/v1/findings/${id}/decision`;
    const headers = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
    const made = await fetch(decisionUrl, { method: 'PUT', headers, body: JSON.stringify({ decision: 'false_positive', reason: 'test' }) });
    expect(made.status).toBe(200);
    try {
      const after = await runPanels(store, dashboard('vulndb-overview').json, range);
      const listed = panel(after, 'Oldest open critical and high findings');
      expect(listed.filter((r) => r.decision !== 'none').map((r) => [r.target, r.issue, r.decision])).toEqual([
        [chosen.target, chosen.issue, 'false_positive'],
      ]);
      const breachedBefore = panel(before, 'SLA breached now by severity and team');
      const breachedAfter = panel(after, 'SLA breached now by severity and team');
      const teamsOf = TARGETS[target]!.length > 0 ? TARGETS[target]! : [NO_TEAM];
      for (const r of breachedAfter) {
        const b = breachedBefore.find((x) => x.team === r.team)!;
        const mine = teamsOf.includes(r.team) ? 1 : 0;
        expect([Number(r.breached), Number(r.breached_suppressed)], r.team).toEqual([Number(b.breached) - mine, mine]);
        expect(Number(r[chosen.severity]), r.team).toBe(Number(b[chosen.severity]) - mine);
      }
    } finally {
      expect((await fetch(decisionUrl, { method: 'DELETE', headers })).status).toBe(204);
    }
  });
});
