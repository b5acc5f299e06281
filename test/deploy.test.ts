import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { Store } from '../src/storage/gateway.js';
import { freshStore } from './support/engine.js';

/**
 * The deployment files, checked statically (docker-compose.yml, Dockerfile, ClickHouse users.d,
 * Grafana provisioning), and every SQL query of every Grafana dashboard executed against the real
 * embedded engine on a migrated database, once empty and once with a few rows, so that a typo or a
 * renamed column in a dashboard fails here rather than in front of a security team.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const exists = (rel: string) => fs.existsSync(path.join(ROOT, rel));

type Obj = Record<string, any>;

const compose: Obj = parseYaml(read('docker-compose.yml'), { merge: true });
const services: Record<string, Obj> = compose.services;
const packageJson: Obj = JSON.parse(read('package.json'));

/** SPEC §10 plus the operational variables src/config.ts adds (DATA_DIR, HOST, batching, logs). */
const SPEC_ENV = [
  'DB_API_PORT',
  'METRICS_API_PORT',
  'REDIS_URL',
  'WORKER_CONCURRENCY',
  'CLICKHOUSE_URL',
  'CLICKHOUSE_DATABASE',
  'CLICKHOUSE_USER',
  'CLICKHOUSE_PASSWORD',
  'PAGE_SIZE_DEFAULT',
  'PAGE_SIZE_MAX',
  'MAX_EVENT_AGE_DAYS',
  'MAX_REPORT_BYTES',
  'JWT_SECRET',
  'JWT_PUBLIC_KEY',
  'JWT_ISSUER',
  'JWT_AUDIENCE',
];
const OPERATIONAL_ENV = ['HOST', 'DATA_DIR', 'INGEST_BATCH_SIZE', 'INGEST_BATCH_WAIT_MS', 'LOG_LEVEL'];
const SERVICE_ENV = [...SPEC_ENV, ...OPERATIONAL_ENV];

/** `environment` as a map, whichever of the two compose syntaxes it uses. */
function envOf(service: Obj): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((e: string) => [e.split('=')[0]!, e.split('=').slice(1).join('=')]));
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

/** Container ports published by a service (short syntax "host:container", "ip:host:container" or long syntax). */
function containerPorts(service: Obj): number[] {
  return (service.ports ?? []).map((p: unknown) => {
    if (typeof p === 'object' && p !== null) return Number((p as Obj).target);
    const parts = String(p).split('/')[0]!.split(':');
    return Number(parts[parts.length - 1]);
  });
}

interface Mount {
  type: 'bind' | 'volume';
  source: string;
  target: string;
}

function mountsOf(service: Obj): Mount[] {
  return (service.volumes ?? []).map((v: unknown) => {
    if (typeof v === 'object' && v !== null) {
      const m = v as Obj;
      return { type: m.type === 'bind' ? 'bind' : 'volume', source: String(m.source), target: String(m.target) };
    }
    const [source, target] = String(v).split(':');
    const bind = source!.startsWith('.') || source!.startsWith('/');
    return { type: bind ? 'bind' : 'volume', source: source!, target: target! };
  });
}

/** `${VAR:-default}` / `${VAR:?message}` / `${VAR}` → the variable name, else undefined. */
const interpolatedName = (value: string) => /^\$\{([A-Z0-9_]+)(?::?[-?][^}]*)?\}$/.exec(value)?.[1];

describe('docker-compose.yml', () => {
  it('gives every service an image or a build, and declares clickhouse, redis, migrate, api, worker and grafana', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'clickhouse', 'grafana', 'migrate', 'redis', 'worker']);
    for (const [name, s] of Object.entries(services)) {
      expect(s.image ?? s.build, `service ${name} has neither image nor build`).toBeTruthy();
      if (s.image && !s.build) expect(s.image, `${name} pins its image tag`).toMatch(/:[\w.-]+$/);
      if (s.image && !s.build) expect(s.image).not.toMatch(/:latest$/);
    }
  });

  it('builds api and worker from the repository Dockerfile and runs the package.json scripts of each role', () => {
    for (const [name, script] of [
      ['api', 'start:api'],
      ['worker', 'start:worker'],
      ['migrate', 'migrate'],
    ] as const) {
      const s = services[name]!;
      const context = typeof s.build === 'string' ? s.build : s.build.context;
      expect(exists(path.join(context, typeof s.build === 'object' && s.build.dockerfile ? s.build.dockerfile : 'Dockerfile'))).toBe(true);
      expect(s.command).toEqual(['npm', 'run', script]);
      expect(packageJson.scripts[script]).toBeTruthy();
    }
    expect(services.worker!.image).toBe(services.api!.image);
    expect(services.migrate!.image).toBe(services.api!.image);
  });

  it('publishes the database API on 8080 and the metrics API on 8081, and nothing for the worker', () => {
    expect(containerPorts(services.api!).sort()).toEqual([8080, 8081]);
    const env = envOf(services.api!);
    expect(env.DB_API_PORT).toBe('8080');
    expect(env.METRICS_API_PORT).toBe('8081');
    expect(services.worker!.ports).toBeUndefined();
    expect(containerPorts(services.clickhouse!)).toContain(8123);
    expect(containerPorts(services.grafana!)).toContain(3000);
  });

  it('passes api and worker only variables the service reads (SPEC §10, src/config.ts)', () => {
    const configText = read('src/config.ts');
    for (const name of SERVICE_ENV) expect(configText, `${name} is not read by src/config.ts`).toMatch(new RegExp(`\\b${name}:`));
    for (const name of ['api', 'worker', 'migrate']) {
      const env = envOf(services[name]!);
      for (const key of Object.keys(env)) expect(SERVICE_ENV, `${name}: unknown variable ${key}`).toContain(key);
      for (const key of ['CLICKHOUSE_URL', 'CLICKHOUSE_DATABASE', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD', 'REDIS_URL']) {
        expect(env[key], `${name} sets ${key}`).toBeTruthy();
      }
    }
    expect(envOf(services.api!).JWT_SECRET).toBeTruthy();
  });

  it('points api, worker and migrate at the clickhouse and redis services, with the credentials clickhouse is given', () => {
    const ch = envOf(services.clickhouse!);
    for (const name of ['api', 'worker', 'migrate']) {
      const env = envOf(services[name]!);
      const chUrl = new URL(env.CLICKHOUSE_URL!);
      expect(services[chUrl.hostname], `${name}: CLICKHOUSE_URL host`).toBeDefined();
      expect(chUrl.port).toBe('8123');
      const redisUrl = new URL(env.REDIS_URL!);
      expect(services[redisUrl.hostname], `${name}: REDIS_URL host`).toBeDefined();
      expect(redisUrl.port).toBe('6379');
      expect(env.CLICKHOUSE_USER).toBe(ch.CLICKHOUSE_USER);
      expect(env.CLICKHOUSE_PASSWORD).toBe(ch.CLICKHOUSE_PASSWORD);
      expect(env.CLICKHOUSE_DATABASE).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
    }
  });

  it('bind-mounts only paths that exist in the repository, and declares every named volume', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const [name, s] of Object.entries(services)) {
      for (const m of mountsOf(s)) {
        if (m.type === 'bind') {
          expect(path.isAbsolute(m.source), `${name}: ${m.source} must be relative to the repository`).toBe(false);
          expect(exists(m.source), `${name}: ${m.source} does not exist`).toBe(true);
        } else {
          expect(declared, `${name}: volume ${m.source} is not declared`).toContain(m.source);
        }
      }
    }
  });

  it('has health checks for clickhouse, redis and api, and depends only on existing services', () => {
    for (const name of ['clickhouse', 'redis', 'api']) expect(services[name]!.healthcheck?.test, `${name} healthcheck`).toBeTruthy();
    for (const [name, s] of Object.entries(services)) {
      const deps = s.depends_on ?? {};
      const entries: [string, Obj][] = Array.isArray(deps) ? deps.map((d: string) => [d, {}]) : Object.entries(deps);
      for (const [dep, cond] of entries) {
        expect(services[dep], `${name} depends on unknown service ${dep}`).toBeDefined();
        expect(dep).not.toBe(name);
        if (cond.condition !== undefined) {
          expect(['service_started', 'service_healthy', 'service_completed_successfully']).toContain(cond.condition);
        }
        if (cond.condition === 'service_healthy') expect(services[dep]!.healthcheck, `${dep} needs a healthcheck`).toBeDefined();
      }
    }
    // Migrations (and their backfills) run once, to completion, before api or worker starts.
    for (const name of ['api', 'worker']) {
      expect(Object.keys(services[name]!.depends_on).sort()).toEqual(['clickhouse', 'migrate', 'redis']);
      expect(services[name]!.depends_on.migrate.condition).toBe('service_completed_successfully');
    }
    expect(Object.keys(services.migrate!.depends_on).sort()).toEqual(['clickhouse', 'redis']);
    expect(services.migrate!.restart).toBe('no');
  });

  it('gives the read-only grafana ClickHouse user the password that Grafana is given', () => {
    const mounted = mountsOf(services.clickhouse!).find((m) => m.target.startsWith('/etc/clickhouse-server/users.d/'));
    expect(mounted).toBeDefined();
    const xml = read(mounted!.source);
    const passwordEnv = /<password from_env="([A-Z0-9_]+)"\s*\/>/.exec(xml)?.[1];
    expect(passwordEnv).toBeDefined();
    expect(envOf(services.clickhouse!)[passwordEnv!]).toBeTruthy();
    expect(envOf(services.grafana!)[passwordEnv!]).toBe(envOf(services.clickhouse!)[passwordEnv!]);
    const database = envOf(services.api!).CLICKHOUSE_DATABASE;
    expect(xml).toContain(`GRANT SELECT ON ${database}.*`);
    expect(xml).toMatch(/<readonly>[12]<\/readonly>/);
    expect(xml).not.toMatch(/GRANT\s+(ALL|INSERT|ALTER|CREATE|DROP)/i);
  });

  it('requires JWT_SECRET or documents a default, and pins no secret in clear', () => {
    const secret = envOf(services.api!).JWT_SECRET!;
    expect(interpolatedName(secret)).toBe('JWT_SECRET');
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('runs the api by default as an unprivileged user, exposing both API ports', () => {
    expect(dockerfile).toMatch(/^FROM node:20-bookworm-slim\b/m);
    expect(dockerfile).toMatch(/^EXPOSE 8080 8081$/m);
    expect(dockerfile).toMatch(/^CMD \["npm", "run", "start:api"\]$/m);
    const user = /^USER (\S+)$/m.exec(dockerfile)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
  });

  it('copies only paths that exist and that .dockerignore lets through', () => {
    const ignore = read('.dockerignore');
    for (const m of dockerfile.matchAll(/^COPY (.+) \S+$/gm)) {
      for (const src of m[1]!.split(/\s+/)) {
        expect(exists(src), `COPY ${src}`).toBe(true);
        expect(ignore, `.dockerignore lets ${src} through`).toContain(`!${src.replace(/\/$/, '')}`);
      }
    }
  });

  it('gets everything the service imports at run time from production dependencies', () => {
    const deps = new Set(Object.keys(packageJson.dependencies));
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        const rel = path.join(dir, e.name);
        if (e.isDirectory()) walk(rel);
        else if (/\.(ts|mjs|js)$/.test(e.name)) files.push(rel);
      }
    };
    for (const dir of ['src', 'workers', 'bin']) walk(dir);
    for (const file of files) {
      const text = read(file);
      for (const m of text.matchAll(/^\s*import\s+(?!type\b)[^'"]*?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        expect(deps, `${file} imports ${spec}`).toContain(pkg);
      }
    }
    // The start scripts run TypeScript through tsx.
    expect(deps).toContain('tsx');
  });
});

// ---------------------------------------------------------------------------------------------
// Grafana

const provisioningMount = mountsOf(services.grafana!).find((m) => m.target === '/etc/grafana/provisioning');
const datasourceFiles = fs.readdirSync(path.join(ROOT, 'dashboards/provisioning/datasources')).filter((f) => /\.ya?ml$/.test(f));
const providerFiles = fs.readdirSync(path.join(ROOT, 'dashboards/provisioning/dashboards')).filter((f) => /\.ya?ml$/.test(f));
const datasources: Obj[] = datasourceFiles.flatMap((f) => parseYaml(read(`dashboards/provisioning/datasources/${f}`)).datasources);
const dashboardFiles = fs
  .readdirSync(path.join(ROOT, 'dashboards'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => `dashboards/${f}`);
const dashboards = dashboardFiles.map((file) => ({ file, json: JSON.parse(read(file)) as Obj }));

function panelsOf(dashboard: Obj): Obj[] {
  return (dashboard.panels ?? []).flatMap((p: Obj) => [p, ...(p.panels ?? [])]);
}

describe('Grafana provisioning', () => {
  it('mounts the provisioning folder and the dashboards folder the provider reads', () => {
    expect(provisioningMount?.source.replace(/^\.\//, '')).toBe('dashboards/provisioning');
    expect(providerFiles.length).toBeGreaterThan(0);
    const dashboardMounts = mountsOf(services.grafana!).filter((m) => m.source.replace(/^\.\//, '').replace(/\/$/, '') === 'dashboards');
    for (const f of providerFiles) {
      const doc = parseYaml(read(`dashboards/provisioning/dashboards/${f}`));
      expect(doc.apiVersion).toBe(1);
      for (const provider of doc.providers) {
        expect(provider.type).toBe('file');
        expect(dashboardMounts.map((m) => m.target), `provider ${provider.name} path`).toContain(provider.options.path);
      }
    }
    const home = envOf(services.grafana!).GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH;
    if (home) {
      const mount = dashboardMounts.find((m) => home.startsWith(m.target + '/'));
      expect(mount).toBeDefined();
      expect(exists(path.join('dashboards', home.slice(mount!.target.length + 1)))).toBe(true);
    }
  });

  it('provisions the ClickHouse data source as the read-only user on the clickhouse service', () => {
    expect(datasources).toHaveLength(1);
    const ds = datasources[0]!;
    expect(ds.type).toBe('grafana-clickhouse-datasource');
    expect(envOf(services.grafana!).GF_INSTALL_PLUGINS).toContain(ds.type);
    expect(services[ds.jsonData.host]).toBeDefined();
    expect(ds.jsonData.port).toBe(8123);
    expect(ds.jsonData.protocol).toBe('http');
    expect(ds.jsonData.defaultDatabase).toBe(envOf(services.api!).CLICKHOUSE_DATABASE);
    const users = read('deploy/clickhouse/users.d/grafana.xml');
    expect(users).toContain(`<${ds.jsonData.username}>`);
    const passwordVar = /^\$\{?([A-Z0-9_]+)\}?$/.exec(ds.secureJsonData.password)?.[1];
    expect(passwordVar).toBeDefined();
    expect(users).toContain(`from_env="${passwordVar}"`);
  });

  it('has dashboards whose queries all use the provisioned data source', () => {
    expect(dashboards.length).toBeGreaterThan(0);
    const uid = datasources[0]!.uid;
    for (const { file, json } of dashboards) {
      expect(json.uid, `${file} uid`).toBeTruthy();
      const ids = panelsOf(json).map((p) => p.id);
      expect(new Set(ids).size, `${file}: panel ids are unique`).toBe(ids.length);
      for (const p of panelsOf(json).filter((p) => p.type !== 'row')) {
        expect(p.targets?.length, `${file}: panel "${p.title}" has a query`).toBeGreaterThan(0);
        for (const t of p.targets) {
          expect(t.datasource?.uid ?? p.datasource?.uid, `${file}: "${p.title}"`).toBe(uid);
          expect(typeof t.rawSql).toBe('string');
          expect([0, 1], `${file}: "${p.title}" format`).toContain(t.format);
        }
      }
      for (const v of json.templating?.list ?? []) {
        if (v.type === 'query') expect(v.datasource?.uid, `${file}: variable ${v.name}`).toBe(uid);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Dashboard queries on the real engine

const FROM = Math.floor(Date.now() / 1000) - 30 * 86400;
const TO = Math.floor(Date.now() / 1000);

/** The arguments of the macro call whose "(" is at `open` (top-level commas only), and its end. */
function macroArgs(sql: string, open: number): { args: string[]; end: number } {
  let depth = 0;
  let start = open + 1;
  const args: string[] = [];
  for (let i = open; i < sql.length; i++) {
    const c = sql[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) {
      args.push(sql.slice(start, i));
      return { args, end: i + 1 };
    } else if (c === ',' && depth === 1) {
      args.push(sql.slice(start, i));
      start = i + 1;
    }
  }
  throw new Error(`unbalanced macro call in ${sql.slice(open, open + 80)}`);
}

/**
 * What Grafana and grafana-clickhouse-datasource send for a query: $__conditionalAll (frontend:
 * "1=1" when the variable is All), template variables (a multi-value variable becomes
 * 'a','b'), then the backend macros of the plugin (pkg/macros), with literal times.
 */
function expandQuery(sql: string, vars: Record<string, string[] | 'all'>): string {
  const macro = '$__conditionalAll(';
  for (let at = sql.lastIndexOf(macro); at !== -1; at = sql.lastIndexOf(macro)) {
    const { args, end } = macroArgs(sql, at + macro.length - 1);
    if (args.length !== 2) throw new Error(`$__conditionalAll takes 2 arguments: ${sql.slice(at, end)}`);
    const name = /\$\{?(\w+)/.exec(args[1]!)?.[1];
    if (!name || !(name in vars)) throw new Error(`$__conditionalAll refers to an unknown variable: ${args[1]}`);
    sql = sql.slice(0, at) + (vars[name] === 'all' ? '1=1' : args[0]!) + sql.slice(end);
  }
  sql = sql.replace(/\$\{(\w+)(?::\w+)?\}|\$(?!__)(\w+)/g, (whole, a: string | undefined, b: string | undefined) => {
    const name = (a ?? b)!;
    const value = vars[name];
    if (value === undefined) throw new Error(`unknown template variable ${whole}`);
    const values = value === 'all' ? ['team-a', 'team-b'] : value;
    return `'${values.join("','")}'`;
  });
  const dt = (s: number) => `toDateTime(${s})`;
  const dt64 = (s: number) => `fromUnixTimestamp64Milli(${s * 1000})`;
  const day = (s: number) => `toDate('${new Date(s * 1000).toISOString().slice(0, 10)}')`;
  const withArg = (name: string, f: (arg: string) => string) => {
    const m = `$__${name}(`;
    for (let at = sql.indexOf(m); at !== -1; at = sql.indexOf(m)) {
      const { args, end } = macroArgs(sql, at + m.length - 1);
      sql = sql.slice(0, at) + f(args[0]!.trim()) + sql.slice(end);
    }
  };
  withArg('timeFilter_ms', (c) => `${c} >= ${dt64(FROM)} AND ${c} <= ${dt64(TO)}`);
  withArg('timeFilter', (c) => `${c} >= ${dt(FROM)} AND ${c} <= ${dt(TO)}`);
  withArg('dateFilter', (c) => `${c} >= ${day(FROM)} AND ${c} <= ${day(TO)}`);
  withArg('timeInterval_ms', (c) => `toStartOfInterval(toDateTime64(${c}, 3), INTERVAL 3600000 millisecond)`);
  withArg('timeInterval', (c) => `toStartOfInterval(toDateTime(${c}), INTERVAL 3600 second)`);
  sql = sql
    .replace(/\$__fromTime_ms\b/g, dt64(FROM))
    .replace(/\$__toTime_ms\b/g, dt64(TO))
    .replace(/\$__fromTime\b/g, dt(FROM))
    .replace(/\$__toTime\b/g, dt(TO))
    .replace(/\$__interval_s\b/g, '3600');
  if (sql.includes('$')) throw new Error(`unexpanded macro or variable in:\n${sql}`);
  return sql;
}

interface DashboardQuery {
  where: string;
  rawSql: string;
}

const queries: DashboardQuery[] = dashboards.flatMap(({ file, json }) => [
  ...panelsOf(json).flatMap((p) => (p.targets ?? []).map((t: Obj) => ({ where: `${file}: panel "${p.title}" (${t.refId})`, rawSql: t.rawSql as string }))),
  ...(json.templating?.list ?? [])
    .filter((v: Obj) => v.type === 'query')
    .map((v: Obj) => ({ where: `${file}: variable ${v.name}`, rawSql: typeof v.query === 'string' ? v.query : v.query.rawSql })),
]);
const variables: Record<string, string[] | 'all'> = Object.fromEntries(
  dashboards.flatMap(({ json }) => (json.templating?.list ?? []).map((v: Obj) => [v.name, 'all'])),
);
const selections: Record<string, string[] | 'all'>[] = [
  variables,
  Object.fromEntries(Object.keys(variables).map((k) => [k, ['team-a']])),
  Object.fromEntries(Object.keys(variables).map((k) => [k, ['team-a', 'team-b']])),
];

async function runAll(store: Store, vars: Record<string, string[] | 'all'>) {
  const results = new Map<string, Obj[]>();
  for (const q of queries) {
    let sql: string;
    try {
      sql = expandQuery(q.rawSql, vars);
    } catch (err) {
      throw new Error(`${q.where}: ${(err as Error).message}`);
    }
    try {
      results.set(q.where, await store.query<Obj>(sql));
    } catch (err) {
      throw new Error(`${q.where} fails with ${JSON.stringify(vars)}: ${(err as Error).message}\n${sql}`);
    }
  }
  return results;
}

const findByTitle = (results: Map<string, Obj[]>, title: string) => {
  const key = [...results.keys()].find((k) => k.includes(`panel "${title}"`));
  if (!key) throw new Error(`no panel titled ${title}`);
  return results.get(key)!;
};

describe('dashboard queries', () => {
  it('finds queries to run', () => {
    expect(queries.length).toBeGreaterThan(0);
    expect(Object.keys(variables)).toContain('team');
  });

  it('run on an empty migrated database with every kind of team selection', async () => {
    const store = await freshStore();
    for (const vars of selections) await runAll(store, vars);
  });

  describe('on a few findings', () => {
    let store: Store;
    const day = 86400;
    const now = Math.floor(Date.now() / 1000);
    const t = (daysAgo: number) => `toDateTime(${now - daysAgo * day}, 'UTC')`;
    const T1 = '11111111-1111-5111-8111-111111111111';
    const T2 = '22222222-2222-5222-8222-222222222222';
    const ISSUE = '33333333-3333-5333-8333-333333333333';
    const F1 = '44444444-4444-5444-8444-444444444444';
    const F2 = '55555555-5555-5555-8555-555555555555';
    const NEVER = "toDateTime(4294967295, 'UTC')";

    beforeAll(async () => {
      store = await freshStore();
      await store.command(`INSERT INTO targets (id, identifier, created_at) VALUES ('${T1}', 'app.example.com', now()), ('${T2}', 'api.example.com', now())`);
      await store.command(
        `INSERT INTO target_teams (team, target_id, associated_seq) VALUES ('team-a', '${T1}', 1), ('team-b', '${T1}', 2), ('team-b', '${T2}', 1)`,
      );
      await store.command(
        `INSERT INTO issue_claims (id, summary, description, cwe_id, detail_time, labels_time) VALUES ('${ISSUE}', 'Outdated TLS', 'd', 326, now(), now())`,
      );
      const finding = (f: { id: string; target: string; version: number; status: string; severity: string; found: string[]; fixed: string[]; prev: string; prevSeverity: string; ttr: number; ttrCount: number; at: string }) =>
        `('${f.id}', '${f.target}', '${ISSUE}', 'r', ${f.version}, '${f.status}', 9.1, '${f.severity}', [${f.found.join(', ')}], [${f.fixed.join(', ')}], ` +
        `${f.found[0]}, ${f.found[f.found.length - 1]}, 0, ${f.ttr}, ${f.ttrCount}, '${f.prev}', '${f.prevSeverity}', ${f.at})`;
      const columns =
        'id, target_id, issue_id, affected_resource, version, status, score, severity, found_at, fixed_at, first_found_at, last_found_at, ' +
        'closed_exposure, ttr_sum, ttr_count, prev_status, prev_severity, updated_at';
      // F1 on T1 (team-a, team-b): OPEN critical 10 days ago, FIXED 5 days ago (120 h). F2 on T2 (team-b): OPEN high 3 days ago.
      for (const row of [
        { id: F1, target: T1, version: 1, status: 'OPEN', severity: 'critical', found: [t(10)], fixed: [NEVER], prev: 'NONE', prevSeverity: 'informational', ttr: 0, ttrCount: 0, at: t(10) },
        { id: F1, target: T1, version: 2, status: 'FIXED', severity: 'critical', found: [t(10)], fixed: [t(5)], prev: 'OPEN', prevSeverity: 'critical', ttr: 120, ttrCount: 1, at: t(5) },
        { id: F2, target: T2, version: 1, status: 'OPEN', severity: 'high', found: [t(3)], fixed: [NEVER], prev: 'NONE', prevSeverity: 'informational', ttr: 0, ttrCount: 0, at: t(3) },
      ]) {
        await store.command(`INSERT INTO findings (${columns}) VALUES ${finding(row)}`);
      }
    });

    it('count open and fixed findings by severity, for all teams and for one', async () => {
      const all = await runAll(store, variables);
      expect(findByTitle(all, 'Open findings by severity')).toEqual([{ critical: 0, high: 1, medium: 0, low: 0, informational: 0 }]);
      expect(findByTitle(all, 'Fixed findings by severity')).toEqual([{ critical: 1, high: 0, medium: 0, low: 0, informational: 0 }]);
      const teamA = await runAll(store, { ...variables, team: ['team-a'] });
      expect(findByTitle(teamA, 'Open findings by severity')).toEqual([{ critical: 0, high: 0, medium: 0, low: 0, informational: 0 }]);
    });

    it('draw one point per day and status, carrying the count forward to the end of the range', async () => {
      const rows = findByTitle(await runAll(store, variables), 'Findings by status over time (daily)');
      const series = (state: string) => rows.filter((r) => r.state === state).map((r) => Number(r.findings));
      // OPEN: 1 from 10 days ago, 0 from 5 days ago, 1 from 3 days ago, up to and including today.
      expect(series('OPEN')).toEqual([1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1]);
      expect(series('FIXED')).toEqual([1, 1, 1, 1, 1, 1]);
      const times = rows.map((r) => String(r.time));
      expect([...times].sort()).toEqual(times);
    });

    it('compute MTTR, exposure, top issues, teams and most exposed targets', async () => {
      const all = await runAll(store, variables);
      expect(findByTitle(all, 'MTTR by severity (hours)')).toEqual([{ severity: 'critical', mttr_hours: 120, fixed_periods: 1 }]);
      const exposure = findByTitle(all, 'Current exposure of open findings (hours)');
      expect(exposure.map((r) => [r.scope, r.open_findings, r.p50])).toEqual([
        ['all', 1, 72],
        ['high', 1, 72],
      ]);
      expect(findByTitle(all, 'Top 10 issues by open findings')).toEqual([
        { issue: 'Outdated TLS', cwe: 'CWE-326', worst_severity: 'high', open_findings: 1, critical: 0, high: 1, targets: 1 },
      ]);
      const teams = findByTitle(all, 'Findings per team');
      expect(teams.map((r) => [r.team, r.targets, r.open_findings, r.fixed_findings])).toEqual([
        ['team-b', 2, 1, 1],
        ['team-a', 1, 0, 1],
      ]);
      expect(findByTitle(all, 'Most exposed targets')).toEqual([
        { target: 'api.example.com', teams: 'team-b', critical: 0, high: 1, medium: 0, low: 0, informational: 0, open_findings: 1, longest_open_hours: 72 },
      ]);
    });
  });
});
