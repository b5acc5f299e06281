import { isIPv4 } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_SLA_DAYS, parseSlaDays, type SlaPolicy } from './sla/policy.js';

/**
 * Configuration, parsed once from the environment (SPEC §10 plus DATA_DIR and a few operational
 * knobs). Nothing else in the code reads process.env: modules receive the parts they need.
 */

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().min(1);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

/** A text whose empty value (as compose passes an unset variable) means the default. */
const orDefault = (fallback: string) => optionalString.transform((v) => v?.trim() ?? fallback);

function isKeySetUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  const loopback = url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(url.hostname);
  return url.protocol === 'https:' || (url.protocol === 'http:' && loopback);
}

function isRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '' && /^(\/\d*)?$/.test(url.pathname);
  } catch {
    return false;
  }
}

const envSchema = z.object({
  DB_API_PORT: port.default(8080),
  METRICS_API_PORT: port.default(8081),
  HOST: z.string().min(1).default('0.0.0.0'),
  // ioredis takes an unparseable URL for a host name and retries it forever: refuse it at start.
  REDIS_URL: z.string().min(1).default('redis://localhost:6379').refine(isRedisUrl, {
    error: 'must be a redis:// or rediss:// URL with a host, e.g. redis://redis:6379 or rediss://:password@host:6380/0',
  }),
  WORKER_CONCURRENCY: positiveInt.default(1),
  INGEST_BATCH_SIZE: positiveInt.max(20_000).default(4000),
  INGEST_BATCH_WAIT_MS: z.coerce.number().int().min(0).max(10_000).default(20),
  // Commit pacing (src/ingest/batcher.ts): at most one batch per interval unless a full one waits.
  INGEST_COMMIT_INTERVAL_MS: z.coerce.number().int().min(0).max(30_000).default(2000),
  CLICKHOUSE_URL: optionalString,
  CLICKHOUSE_DATABASE: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier')
    .default('vulndb'),
  // docs/SCALING.md: migrations ON CLUSTER with replicated engines (server mode only).
  CLICKHOUSE_CLUSTER: optionalString.refine((v) => v === undefined || /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(v), {
    error: 'must be a cluster name of the server configuration (letters, digits, _ . -)',
  }),
  // SPEC §10: the tables a cluster holds; with the embedded engine, the same without replication.
  CLICKHOUSE_LAYOUT: optionalString.pipe(z.enum(['single', 'cluster'], { error: 'must be "single" or "cluster"' }).optional()),
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  DATA_DIR: z.string().min(1).default('./data'),
  PAGE_SIZE_DEFAULT: positiveInt.default(20),
  PAGE_SIZE_MAX: positiveInt.default(100),
  MAX_EVENT_AGE_DAYS: z.coerce.number().int().min(0).default(0),
  MAX_REPORT_BYTES: positiveInt.default(10 * 1024 * 1024),
  // SPEC §10: an HS256 secret shorter than 32 characters can be brute-forced offline from one token.
  JWT_SECRET: optionalString.refine((v) => v === undefined || v.length >= 32, {
    error: 'must be at least 32 characters (e.g. `openssl rand -base64 48`)',
  }),
  JWT_PUBLIC_KEY: optionalString,
  JWT_ISSUER: optionalString,
  JWT_AUDIENCE: optionalString,
  OIDC_ISSUER: optionalString.pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional()),
  OIDC_CLIENT_ID: optionalString,
  // SPEC §8.1: the keys an identity provider signs with. Over plain http anyone on the path could
  // hand the service keys of their own; http is for a provider on the same machine only.
  JWT_JWKS_URL: optionalString.refine((v) => v === undefined || isKeySetUrl(v), {
    error: 'must be an https URL (http only for localhost or 127.0.0.1)',
  }),
  JWT_TEAMS_CLAIM: orDefault('teams'),
  JWT_ADMIN_CLAIM: orDefault('admin'),
  JWT_ADMIN_VALUE: orDefault('vulndb-admin'),
  DB_API_AUTH: optionalString.pipe(z.enum(['jwt'], { error: 'must be "jwt" or empty' }).optional()),
  QUERY_TIMEOUT_MS: positiveInt.max(3_600_000).default(30_000),
  JOB_LOCK_MS: positiveInt.min(1000).max(600_000).default(30_000),
  JOB_MAX_STALLS: positiveInt.max(1000).default(10),
  // SPEC §9.1: deliveries reach public addresses only unless this says otherwise.
  WEBHOOK_ALLOW_PRIVATE: optionalString
    .pipe(z.enum(['true', 'false'], { error: 'must be "true" or "false"' }).optional())
    .transform((v) => v === 'true'),
  MAX_WEBHOOKS: positiveInt.max(100_000).default(100),
  ADMIN_PORT: port.default(9464),
  ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
  // SPEC §10.1: a short token could be guessed by whoever reaches the admin port.
  ADMIN_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 16, {
    error: 'must be at least 16 characters (e.g. `openssl rand -base64 32`)',
  }),
  SHUTDOWN_TIMEOUT_MS: positiveInt.min(100).max(600_000).default(25_000),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  // The source commit of the build, for vulndb_build_info (the image's build argument of the same name).
  VULNDB_COMMIT: optionalString,
  // SPEC §12.1: an unreadable policy stops the start rather than silently counting no breach.
  SLA_DAYS: optionalString.transform((v, ctx) => {
    try {
      return parseSlaDays(v ?? DEFAULT_SLA_DAYS);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  }),
});

export type Env = z.infer<typeof envSchema>;

export interface StoreConfig {
  /** Server URL; undefined selects the embedded engine. */
  url: string | undefined;
  database: string;
  user: string;
  password: string;
  /** Folder of the embedded engine's data (one process owns it). */
  embeddedPath: string;
  /**
   * Time limit of one statement in milliseconds (SPEC §5.6, QUERY_TIMEOUT_MS); undefined: none (the
   * benchmark scripts' stores). Migrations run without it (src/storage/gateway.ts, StatementOptions).
   */
  queryTimeoutMs?: number;
  /** CLICKHOUSE_CLUSTER: the migrations' cluster (server mode only; src/storage/cluster.ts). */
  cluster?: string;
  /**
   * CLICKHOUSE_LAYOUT: `cluster`, the tables a cluster holds (no node-local tables, versions read as
   * unmerged; src/storage/cluster.ts), also on the embedded engine without replication; else `single`.
   */
  layout?: StoreLayout;
}

export type StoreLayout = 'single' | 'cluster';

export interface Config {
  host: string;
  dbApiPort: number;
  metricsApiPort: number;
  redisUrl: string;
  /** Prefix of every Redis key the service writes (queues, locks, cache). */
  redisPrefix: string;
  store: StoreConfig;
  dataDir: string;
  ingest: {
    concurrency: number;
    batchSize: number;
    batchWaitMs: number;
    /** INGEST_COMMIT_INTERVAL_MS: the least time between two batches' starts while the queue is not backed up. */
    commitIntervalMs: number;
    maxEventAgeDays: number;
  };
  pageSizeDefault: number;
  pageSizeMax: number;
  maxReportBytes: number;
  /**
   * The admin listener (/metrics, /healthz, /readyz, bull-board; SPEC §10.1): loopback by default;
   * with `token`, every route but the probes requires it, without one the queue board is read-only.
   */
  admin: { port: number; host: string; token: string | undefined };
  /** How long a stopping process may take before it exits anyway (SPEC §3.7). */
  shutdownTimeoutMs: number;
  /** `jwt`: the database API requires the metrics API's bearer tokens (SPEC §5.1). */
  dbApiAuth: 'jwt' | undefined;
  /** Time limit of one store statement (SPEC §5.6). */
  queryTimeoutMs: number;
  /** BullMQ job settings of the ingest workers (README, Operations: durability). */
  jobs: {
    /** A held job's lock lives this long unless renewed; a dead holder's jobs return after it. */
    lockMs: number;
    /** Times a job may be found stalled (its holder died) before it fails. */
    maxStalls: number;
  };
  jwt: {
    secret: string | undefined;
    publicKey: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    /** JWT_JWKS_URL: an identity provider's key set (SPEC §8.1). */
    jwksUrl?: string | undefined;
    /** Claim names of a provider's tokens (SPEC §8.1); absent: `teams`, `admin`, `vulndb-admin`. */
    claims?: { teams: string; admin: string; adminValue: string };
  };
  logLevel: Env['LOG_LEVEL'];
  /** The triage page's sign-in through an identity provider (SPEC §15); none: a pasted token. */
  oidc: { issuer: string; clientId: string } | undefined;
  /** VULNDB_COMMIT: the commit the running code was built from, when known (vulndb_build_info). */
  commit: string | undefined;
  /** Remediation deadlines in days per severity (SPEC §12.1, SLA_DAYS). */
  slaPolicy: SlaPolicy;
  /** SPEC §9.1: where deliveries may go (WEBHOOK_ALLOW_PRIVATE) and how many subscriptions (MAX_WEBHOOKS). */
  webhooks: WebhookLimits;
}

export interface WebhookLimits {
  allowPrivate: boolean;
  maxSubscriptions: number;
}

export class ConfigError extends Error {}

/** Whether a listener on `host` is reachable from this machine only (127.0.0.0/8, ::1, localhost). */
function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice('::ffff:'.length) : h;
  return isIPv4(v4) && v4.startsWith('127.');
}

/** The rules between variables, which the schema of each one cannot state. */
function checkCombinations(e: z.infer<typeof envSchema>): void {
  if (e.PAGE_SIZE_DEFAULT > e.PAGE_SIZE_MAX) {
    throw new ConfigError('invalid configuration: PAGE_SIZE_DEFAULT must not exceed PAGE_SIZE_MAX');
  }
  if (e.CLICKHOUSE_CLUSTER !== undefined && e.CLICKHOUSE_URL === undefined) {
    throw new ConfigError('invalid configuration: CLICKHOUSE_CLUSTER needs a server (CLICKHOUSE_URL)');
  }
  if (e.ADMIN_TOKEN === undefined && !isLoopback(e.ADMIN_HOST)) {
    throw new ConfigError(
      `invalid configuration: ADMIN_HOST=${e.ADMIN_HOST} reaches beyond loopback, so ADMIN_TOKEN must be set (the admin listener's queue board and metrics would be open to that network)`,
    );
  }
  if (e.CLICKHOUSE_CLUSTER !== undefined && e.CLICKHOUSE_LAYOUT === 'single') {
    throw new ConfigError('invalid configuration: CLICKHOUSE_CLUSTER holds the cluster layout (CLICKHOUSE_LAYOUT=cluster)');
  }
  if ((e.OIDC_ISSUER === undefined) !== (e.OIDC_CLIENT_ID === undefined)) {
    throw new ConfigError('invalid configuration: OIDC_ISSUER and OIDC_CLIENT_ID go together');
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  checkCombinations(e);
  const dataDir = path.resolve(e.DATA_DIR);
  return {
    host: e.HOST,
    dbApiPort: e.DB_API_PORT,
    metricsApiPort: e.METRICS_API_PORT,
    redisUrl: e.REDIS_URL,
    redisPrefix: 'bull',
    store: {
      url: e.CLICKHOUSE_URL,
      database: e.CLICKHOUSE_DATABASE,
      user: e.CLICKHOUSE_USER,
      password: e.CLICKHOUSE_PASSWORD,
      embeddedPath: path.join(dataDir, 'clickhouse'),
      queryTimeoutMs: e.QUERY_TIMEOUT_MS,
      ...(e.CLICKHOUSE_CLUSTER !== undefined ? { cluster: e.CLICKHOUSE_CLUSTER } : {}),
      layout: e.CLICKHOUSE_LAYOUT ?? (e.CLICKHOUSE_CLUSTER !== undefined ? 'cluster' : 'single'),
    },
    dataDir,
    ingest: {
      concurrency: e.WORKER_CONCURRENCY,
      batchSize: e.INGEST_BATCH_SIZE,
      batchWaitMs: e.INGEST_BATCH_WAIT_MS,
      commitIntervalMs: e.INGEST_COMMIT_INTERVAL_MS,
      maxEventAgeDays: e.MAX_EVENT_AGE_DAYS,
    },
    pageSizeDefault: e.PAGE_SIZE_DEFAULT,
    pageSizeMax: e.PAGE_SIZE_MAX,
    maxReportBytes: e.MAX_REPORT_BYTES,
    admin: { port: e.ADMIN_PORT, host: e.ADMIN_HOST, token: e.ADMIN_TOKEN },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    dbApiAuth: e.DB_API_AUTH,
    queryTimeoutMs: e.QUERY_TIMEOUT_MS,
    jobs: { lockMs: e.JOB_LOCK_MS, maxStalls: e.JOB_MAX_STALLS },
    jwt: {
      secret: e.JWT_SECRET,
      publicKey: e.JWT_PUBLIC_KEY,
      issuer: e.JWT_ISSUER,
      audience: e.JWT_AUDIENCE,
      jwksUrl: e.JWT_JWKS_URL,
      claims: { teams: e.JWT_TEAMS_CLAIM, admin: e.JWT_ADMIN_CLAIM, adminValue: e.JWT_ADMIN_VALUE },
    },
    logLevel: e.LOG_LEVEL,
    oidc: e.OIDC_ISSUER !== undefined && e.OIDC_CLIENT_ID !== undefined ? { issuer: e.OIDC_ISSUER, clientId: e.OIDC_CLIENT_ID } : undefined,
    commit: e.VULNDB_COMMIT,
    slaPolicy: e.SLA_DAYS,
    webhooks: { allowPrivate: e.WEBHOOK_ALLOW_PRIVATE, maxSubscriptions: e.MAX_WEBHOOKS },
  };
}
