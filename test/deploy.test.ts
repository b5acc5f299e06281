import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../src/config.js';
import { entryOf, execCmd, readDockerfile } from './support/dockerfile.js';

/**
 * The deployment files, checked statically (docker-compose.yml, Dockerfile, .env.example,
 * ClickHouse users.d, Prometheus). test/image-command.test.ts runs the image's CMD; Grafana's
 * provisioning and dashboards are checked in test/dashboards.test.ts.
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
  'JWT_JWKS_URL',
  'JWT_TEAMS_CLAIM',
  'JWT_ADMIN_CLAIM',
  'JWT_ADMIN_VALUE',
  'DB_API_AUTH',
  'QUERY_TIMEOUT_MS',
  'SHUTDOWN_TIMEOUT_MS',
];
const OPERATIONAL_ENV = ['HOST', 'DATA_DIR', 'INGEST_BATCH_SIZE', 'INGEST_BATCH_WAIT_MS', 'LOG_LEVEL'];
/**
 * The admin listener's address (/healthz, /readyz, /metrics; issue 22). Compose sets them ahead of
 * the listener: until src/config.ts reads them they are allowed without that check, and from then
 * on they are checked like the others.
 */
const ADMIN_ENV = ['ADMIN_HOST', 'ADMIN_PORT', 'ADMIN_TOKEN'];
const SERVICE_ENV = [...SPEC_ENV, ...OPERATIONAL_ENV, ...ADMIN_ENV];
/** The vulndb services: built from the repository's Dockerfile. */
const VULNDB_SERVICES = ['migrate', 'api', 'worker'];
/** Every service that runs until stopped (not the one-shot migrate). */
const LONG_RUNNING = ['api', 'worker', 'redis', 'clickhouse', 'prometheus', 'grafana'];
/** Secrets compose must refuse to start without, where they are passed. */
const REQUIRED_SECRETS: [service: string, variable: string, source: string][] = [
  ['api', 'JWT_SECRET', 'JWT_SECRET'],
  ['api', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_PASSWORD'],
  ['worker', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_PASSWORD'],
  ['migrate', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_PASSWORD'],
  ['clickhouse', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_PASSWORD'],
  ['clickhouse', 'CLICKHOUSE_GRAFANA_PASSWORD', 'CLICKHOUSE_GRAFANA_PASSWORD'],
  ['grafana', 'CLICKHOUSE_GRAFANA_PASSWORD', 'CLICKHOUSE_GRAFANA_PASSWORD'],
  ['grafana', 'GF_SECURITY_ADMIN_PASSWORD', 'GRAFANA_ADMIN_PASSWORD'],
  ['api', 'ADMIN_TOKEN', 'ADMIN_TOKEN'],
  ['worker', 'ADMIN_TOKEN', 'ADMIN_TOKEN'],
];

/** `environment` as a map, whichever of the two compose syntaxes it uses. */
function envOf(service: Obj): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((e: string) => [e.split('=')[0]!, e.split('=').slice(1).join('=')]));
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

interface Published {
  /** The host address part: undefined when the entry has none (every interface). */
  hostIp: string | undefined;
  published: string;
  target: number;
}

/** Ports published by a service (short syntax "container", "host:container", "ip:host:container", or long syntax). */
function publishedPorts(service: Obj): Published[] {
  return (service.ports ?? []).map((p: unknown): Published => {
    if (typeof p === 'object' && p !== null) {
      const o = p as Obj;
      return { hostIp: o.host_ip, published: String(o.published ?? ''), target: Number(o.target) };
    }
    // An interpolated host address (${VAR:-127.0.0.1}) holds no ':' before its closing brace.
    const m = /^(?:(\$\{[^}]*\}|[\d.]+|\[[^\]]*\]):)?(?:(\d+):)?(\d+)(?:\/\w+)?$/.exec(String(p));
    if (!m) throw new Error(`unreadable port entry ${String(p)}`);
    return { hostIp: m[1], published: m[2] ?? '', target: Number(m[3]) };
  });
}

/** Container ports published by a service. */
const containerPorts = (service: Obj): number[] => publishedPorts(service).map((p) => p.target);

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

/** A compose duration ("1m30s", "60s", "500ms") in seconds. */
function seconds(duration: string | undefined): number {
  if (duration === undefined) return 10; // compose's default stop_grace_period
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let rest = duration;
  for (const m of duration.matchAll(re)) {
    total += Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    rest = rest.replace(m[0], '');
  }
  if (rest !== '') throw new Error(`unreadable duration ${duration}`);
  return total;
}

const stages = readDockerfile();
const production = stages[stages.length - 1]!;
const imageCmd = execCmd(production);

describe('docker-compose.yml', () => {
  it('gives every service an image or a build, and declares clickhouse, redis, migrate, api, worker, prometheus and grafana', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'clickhouse', 'grafana', 'migrate', 'prometheus', 'redis', 'worker']);
    for (const [name, s] of Object.entries(services)) {
      expect(s.image ?? s.build, `service ${name} has neither image nor build`).toBeTruthy();
      if (s.image && !s.build) expect(s.image, `${name} pins its image tag`).toMatch(/:v?\d+(\.\d+)+[\w.-]*$/);
      if (s.image && !s.build) expect(s.image).not.toMatch(/:latest$/);
      // chdb is not in the image, so nothing native pins an architecture.
      expect(s.platform, `${name} pins a platform`).toBeUndefined();
    }
  });

  it('builds migrate, api and worker from the repository Dockerfile as one image', () => {
    for (const name of VULNDB_SERVICES) {
      const s = services[name]!;
      const context = typeof s.build === 'string' ? s.build : s.build.context;
      expect(exists(path.join(context, typeof s.build === 'object' && s.build.dockerfile ? s.build.dockerfile : 'Dockerfile'))).toBe(true);
      expect(s.image).toBe(services.api!.image);
    }
  });

  it('runs node directly in exec form for every vulndb command: the compiled CLI, no npm, no shell, no tsx', () => {
    const { index, file } = entryOf(imageCmd);
    const roles: Record<string, string[]> = { migrate: ['migrate'], api: ['serve', 'api'], worker: ['serve', 'worker'] };
    for (const name of VULNDB_SERVICES) {
      const command = services[name]!.command;
      expect(Array.isArray(command), `${name}: command in exec form`).toBe(true);
      expect(command[0], name).toBe('node');
      const entry = entryOf(command);
      expect(entry.file, `${name}: the image's entry`).toBe(file);
      expect(command.slice(entry.index + 1), name).toEqual(roles[name]);
      expect(command.join(' '), name).not.toMatch(/\b(npm|npx|tsx|sh|bash)\b|(^|\s)-c(\s|$)/);
    }
    // The api is the image's default: compose runs exactly the CMD.
    expect(services.api!.command).toEqual(imageCmd);
    expect(imageCmd.slice(index + 1)).toEqual(['serve', 'api']);
    // No service of the stack runs a shell-form command either.
    for (const [name, s] of Object.entries(services)) {
      if (s.command !== undefined) expect(Array.isArray(s.command), `${name}: command in exec form`).toBe(true);
      if (s.entrypoint !== undefined) expect(Array.isArray(s.entrypoint), `${name}: entrypoint in exec form`).toBe(true);
    }
  });

  it('gives the worker and the api time to stop gracefully, and forwards signals to node', () => {
    // The worker finishes its batch, then closes Redis and the store.
    expect(seconds(services.worker!.stop_grace_period)).toBeGreaterThanOrEqual(60);
    // Each ends itself within SHUTDOWN_TIMEOUT_MS (SPEC §3.7): compose must not SIGKILL it sooner.
    for (const name of ['api', 'worker']) {
      const timeoutMs = Number(envOf(services[name]!).SHUTDOWN_TIMEOUT_MS ?? loadConfig({}).shutdownTimeoutMs);
      expect(seconds(services[name]!.stop_grace_period) * 1000, name).toBeGreaterThan(timeoutMs);
    }
    // Requests in flight are bounded by QUERY_TIMEOUT_MS (30 s by default).
    expect(seconds(services.api!.stop_grace_period)).toBeGreaterThan(30);
    for (const name of ['api', 'worker']) expect(services[name]!.init, name).toBe(true);
  });

  it('publishes the database API on 8080 (127.0.0.1 unless DB_API_BIND says otherwise) and the metrics API on 8081', () => {
    expect(containerPorts(services.api!).sort()).toEqual([8080, 8081]);
    const env = envOf(services.api!);
    expect(env.DB_API_PORT).toBe('8080');
    expect(env.METRICS_API_PORT).toBe('8081');
    const db = publishedPorts(services.api!).find((p) => p.target === 8080)!;
    expect(db.hostIp).toBe('${DB_API_BIND:-127.0.0.1}');
    // DB_API_AUTH reaches the api, so that DB_API_BIND=0.0.0.0 can come with DB_API_AUTH=jwt.
    expect(interpolatedName(env.DB_API_AUTH ?? '')).toBe('DB_API_AUTH');
    const example = read('.env.example');
    expect(example).toMatch(/^#?\s*DB_API_AUTH=jwt$/m);
    expect(example).toMatch(/^#?\s*DB_API_BIND=0\.0\.0\.0$/m);
    for (const name of ['worker', 'migrate', 'redis']) expect(services[name]!.ports, name).toBeUndefined();
    expect(containerPorts(services.clickhouse!)).toContain(8123);
    expect(containerPorts(services.grafana!)).toContain(3000);
  });

  it('binds every unauthenticated published port to 127.0.0.1', () => {
    // Published on every interface: only what asks for credentials.
    const authenticated = new Set(['api:8081', 'grafana:3000']);
    for (const [name, s] of Object.entries(services)) {
      for (const p of publishedPorts(s)) {
        if (authenticated.has(`${name}:${p.target}`)) continue;
        if (name === 'api' && p.target === 8080) continue; // the test above
        expect(p.hostIp, `${name}: port ${p.target}`).toBe('127.0.0.1');
      }
    }
  });

  it('passes api and worker only variables the service reads (SPEC §10, src/config.ts)', () => {
    const configText = read('src/config.ts');
    const reads = (name: string) => new RegExp(`\\b${name}:`).test(configText);
    for (const name of [...SPEC_ENV, ...OPERATIONAL_ENV]) expect(reads(name), `${name} is not read by src/config.ts`).toBe(true);
    for (const name of VULNDB_SERVICES) {
      const env = envOf(services[name]!);
      for (const key of Object.keys(env)) expect(SERVICE_ENV, `${name}: unknown variable ${key}`).toContain(key);
      for (const key of ['CLICKHOUSE_URL', 'CLICKHOUSE_DATABASE', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD', 'REDIS_URL']) {
        expect(env[key], `${name} sets ${key}`).toBeTruthy();
      }
    }
    expect(envOf(services.api!).JWT_SECRET).toBeTruthy();
    // The admin listener listens on the container's interfaces, where Prometheus reaches it.
    for (const name of ['api', 'worker']) {
      expect(envOf(services[name]!).ADMIN_HOST, name).toBe('0.0.0.0');
      expect(envOf(services[name]!).ADMIN_PORT, name).toMatch(/^\d+$/);
    }
    expect(envOf(services.api!).ADMIN_PORT).toBe(envOf(services.worker!).ADMIN_PORT);
  });

  it('points api, worker and migrate at the clickhouse and redis services, with the credentials clickhouse is given', () => {
    const ch = envOf(services.clickhouse!);
    for (const name of VULNDB_SERVICES) {
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

  it('has a health check on every long-running service, and depends only on existing services', () => {
    for (const name of LONG_RUNNING) expect(services[name]!.healthcheck?.test, `${name} healthcheck`).toBeTruthy();
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

  it('checks api and worker readiness on the admin listener with node (the slim image has no curl)', () => {
    for (const name of ['api', 'worker']) {
      const test: string[] = services[name]!.healthcheck.test;
      expect(test.slice(0, 3), name).toEqual(['CMD', 'node', '-e']);
      const url = /fetch\('([^']+)'\)/.exec(test[3]!)?.[1];
      expect(url, name).toBe(`http://127.0.0.1:${envOf(services[name]!).ADMIN_PORT}/readyz`);
      expect(test[3], `${name}: exits 1 on a failed answer or no answer`).toMatch(
        /process\.exit\(r\.ok \? 0 : 1\), \(\) => process\.exit\(1\)/,
      );
    }
  });

  it('requires every secret (${VAR:?…}) instead of defaulting it, and .env.example gives development values', () => {
    const example = read('.env.example');
    for (const [service, variable, source] of REQUIRED_SECRETS) {
      const value = envOf(services[service]!)[variable];
      expect(value, `${service}: ${variable}`).toMatch(new RegExp(`^\\$\\{${source}:\\?[^}]+\\}$`));
      expect(example, `.env.example sets ${source}`).toMatch(new RegExp(`^${source}=\\S+`, 'm'));
    }
    expect(read('.gitignore')).toMatch(/^\.env$/m);
    // The development JWT secret is long enough for src/config.ts.
    expect(/^JWT_SECRET=(\S+)$/m.exec(example)![1]!.length).toBeGreaterThanOrEqual(32);
    expect(/^ADMIN_TOKEN=(\S+)$/m.exec(example)![1]!.length).toBeGreaterThanOrEqual(16);
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

  it('keeps queued reports in Valkey: append-only, fsynced before each answer, a memory limit and noeviction', () => {
    const command: string[] = services.redis!.command;
    expect(Array.isArray(command)).toBe(true);
    expect(command[0]).toMatch(/^(valkey|redis)-server$/);
    const flag = (name: string) => {
      const i = command.indexOf(`--${name}`);
      expect(i, `--${name}`).toBeGreaterThan(0);
      return command[i + 1];
    };
    expect(flag('appendonly')).toBe('yes');
    expect(flag('appendfsync')).toBe('always');
    expect(flag('maxmemory-policy')).toBe('noeviction');
    const maxmemory = flag('maxmemory')!;
    const size = /^\$\{REDIS_MAXMEMORY:-([^}]+)\}$/.exec(maxmemory)?.[1] ?? maxmemory;
    expect(size).toMatch(/^\d+(mb|gb)$/i);
    expect(mountsOf(services.redis!).map((m) => m.target)).toContain('/data');
  });

  it('has Prometheus scrape the admin port of api and worker', () => {
    const configMount = mountsOf(services.prometheus!).find((m) => m.target === '/etc/prometheus/prometheus.yml')!;
    expect(configMount).toBeDefined();
    expect(services.prometheus!.command).toContain(`--config.file=${configMount.target}`);
    const config: Obj = parseYaml(read(configMount.source));
    const targets = new Map<string, string[]>();
    for (const job of config.scrape_configs as Obj[]) {
      const found: string[] = [
        ...(job.static_configs ?? []).flatMap((c: Obj) => c.targets as string[]),
        ...(job.dns_sd_configs ?? []).flatMap((c: Obj) => (c.names as string[]).map((n) => `${n}:${c.port}`)),
      ];
      for (const t of found) {
        const [host, port] = t.split(':');
        targets.set(host!, [...(targets.get(host!) ?? []), `${port}${job.metrics_path ?? '/metrics'}`]);
      }
    }
    for (const name of ['api', 'worker']) {
      expect(targets.get(name), `${name} is scraped`).toEqual([`${envOf(services[name]!).ADMIN_PORT}/metrics`]);
    }
  });

  it('has Prometheus send ADMIN_TOKEN to the admin listeners, from a secret holding that variable', () => {
    const configMount = mountsOf(services.prometheus!).find((m) => m.target === '/etc/prometheus/prometheus.yml')!;
    const config: Obj = parseYaml(read(configMount.source));
    const mounted = new Map<string, string>(
      (services.prometheus!.secrets as string[]).map((name) => [`/run/secrets/${name}`, compose.secrets[name].environment]),
    );
    const vulndbJobs = (config.scrape_configs as Obj[]).filter((j) => (j.dns_sd_configs ?? []).length > 0);
    expect(vulndbJobs.length).toBe(2);
    for (const job of vulndbJobs) {
      expect(job.authorization?.type ?? 'Bearer', job.job_name).toBe('Bearer');
      expect(mounted.get(job.authorization?.credentials_file), job.job_name).toBe('ADMIN_TOKEN');
    }
    // The token the services require is the one Prometheus sends.
    for (const name of ['api', 'worker']) expect(envOf(services[name]!).ADMIN_TOKEN).toMatch(/^\$\{ADMIN_TOKEN:\?/);
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const build = stages.find((s) => s.name === 'build');
  const commands = (stage: { instructions: { keyword: string; args: string }[] }, keyword: string) =>
    stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);

  it('builds in two stages from Node 22 LTS (Debian slim): a build stage and the production stage it copies dist/ from', () => {
    expect(stages.length).toBe(2);
    for (const s of stages) expect(s.from).toBe('node:22-bookworm-slim');
    // package.json's engines and .ci/run (which reads the FROM line) follow the image's major.
    expect(packageJson.engines.node).toBe('>=22');
    expect(build).toBeDefined();
    expect(production.name).toBe('production');
    expect(commands(build!, 'RUN')).toContain('npm run build');
    expect(packageJson.scripts.build).toBe('tsc -p tsconfig.build.json');
    const buildConfig: Obj = JSON.parse(read('tsconfig.build.json').replace(/^\s*\/\/.*$/gm, ''));
    expect(buildConfig.extends).toBe('./tsconfig.json');
    expect(buildConfig.compilerOptions.outDir).toBe('dist');
    expect(buildConfig.compilerOptions.rootDir).toBe('.');
    expect(buildConfig.compilerOptions.noEmit).toBe(false);
    expect(commands(production, 'COPY')).toContain('--from=build /app/dist ./dist');
    expect(read('.gitignore')).toMatch(/^dist\/$/m);
  });

  it('installs production dependencies only, without chdb, in the production stage', () => {
    const installs = commands(production, 'RUN').filter((r) => /\bnpm (ci|install)\b/.test(r));
    expect(installs.length).toBe(1);
    expect(installs[0]).toMatch(/npm ci\b/);
    expect(installs[0]).toMatch(/--omit=dev\b/);
    expect(installs[0]).toMatch(/--omit=optional\b/);
    // The production stage carries no TypeScript sources, and nothing runs TypeScript: bin/vulndb.mjs
    // (the `vulndb` on PATH) runs dist/ when src/ is absent.
    for (const copy of commands(production, 'COPY')) expect(copy).not.toMatch(/^(src|workers|tsconfig)/);
    expect(packageJson.optionalDependencies?.chdb).toBeDefined();
    expect(packageJson.dependencies.chdb).toBeUndefined();
    expect(packageJson.dependencies.tsx).toBeUndefined();
    expect(packageJson.devDependencies.tsx).toBeDefined();
  });

  it('runs the compiled api in exec form as an unprivileged user, exposing both API ports and the admin port', () => {
    expect(imageCmd[0]).toBe('node');
    const { index, file } = entryOf(imageCmd);
    expect(file).toBe('dist/src/cli/main.js');
    // The source of the entry file, compiled by tsconfig.build.json (rootDir "."), exists.
    expect(exists(file.replace(/^dist\//, '').replace(/\.js$/, '.ts'))).toBe(true);
    expect(imageCmd.slice(index + 1)).toEqual(['serve', 'api']);
    expect(imageCmd.join(' ')).not.toMatch(/\b(npm|npx|tsx|sh|bash)\b/);
    expect(dockerfile).not.toMatch(/^(CMD|ENTRYPOINT)\s+[^[]/m);
    expect(production.instructions.some((i) => i.keyword === 'ENTRYPOINT')).toBe(false);
    const users = commands(production, 'USER');
    expect(users.length).toBe(1);
    expect(['root', '0']).not.toContain(users[0]);
    // USER comes after the last RUN, and before CMD.
    const order = production.instructions.map((i) => i.keyword);
    expect(order.lastIndexOf('RUN')).toBeLessThan(order.indexOf('USER'));
    expect(commands(production, 'EXPOSE').join(' ').split(' ').sort()).toEqual(['8080', '8081', '9464']);
    expect(commands(production, 'WORKDIR')).toEqual(['/app']);
    // src/storage/migrate.ts finds sql/ three levels above dist/src/storage/: /app/sql.
    expect(commands(production, 'COPY')).toContain('sql ./sql');
  });

  it('copies only paths that exist and that .dockerignore lets through', () => {
    const ignore = read('.dockerignore');
    for (const stage of stages) {
      for (const copy of commands(stage, 'COPY')) {
        if (copy.startsWith('--from=')) continue;
        const parts = copy.split(' ');
        for (const src of parts.slice(0, -1)) {
          expect(exists(src), `COPY ${src}`).toBe(true);
          expect(ignore, `.dockerignore lets ${src} through`).toContain(`!${src.replace(/\/$/, '')}`);
        }
      }
    }
    expect(ignore).toMatch(/^\*\*\/dist$/m);
  });

  it('gets everything the compiled service imports at run time from production dependencies (chdb: optional, loaded on demand)', () => {
    const deps = new Set(Object.keys(packageJson.dependencies));
    const optional = new Set(Object.keys(packageJson.optionalDependencies ?? {}));
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
        const rel = path.join(dir, e.name);
        if (e.isDirectory()) walk(rel);
        else if (/\.(ts|mjs|js)$/.test(e.name)) files.push(rel);
      }
    };
    for (const dir of ['src', 'workers']) walk(dir);
    const pkgOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    for (const file of files) {
      const text = read(file);
      for (const m of text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm)) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        expect(deps, `${file} imports ${spec}`).toContain(pkgOf(spec));
      }
      for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
        const spec = m[1]!;
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        const pkg = pkgOf(spec);
        if (optional.has(pkg)) {
          // Only the storage clients' module loads the embedded engine, and only in embedded mode.
          expect(file, `${file} loads the optional ${pkg}`).toBe(path.join('src', 'storage', 'clients.ts'));
        } else {
          expect(deps, `${file} imports ${spec}`).toContain(pkg);
        }
      }
    }
    expect([...optional]).toEqual(['chdb']);
    expect(read('src/storage/clients.ts')).toContain(
      'the embedded engine (npm package chdb) is not installed: set CLICKHOUSE_URL or install it',
    );
  });
});
