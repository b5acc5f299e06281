import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

/**
 * The deployment files, checked statically (docker-compose.yml, Dockerfile, ClickHouse users.d).
 * Grafana's provisioning and dashboards are checked in test/dashboards.test.ts.
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
