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

const envSchema = z.object({
  DB_API_PORT: port.default(8080),
  METRICS_API_PORT: port.default(8081),
  HOST: z.string().min(1).default('0.0.0.0'),
  REDIS_URL: z.string().min(1).default('redis://localhost:6379'),
  WORKER_CONCURRENCY: positiveInt.default(1),
  INGEST_BATCH_SIZE: positiveInt.max(20_000).default(4000),
  INGEST_BATCH_WAIT_MS: z.coerce.number().int().min(0).max(10_000).default(20),
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
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
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
    maxEventAgeDays: number;
  };
  pageSizeDefault: number;
  pageSizeMax: number;
  maxReportBytes: number;
  /** The admin listener (/metrics, /healthz, /readyz, bull-board): unauthenticated, loopback by default. */
  admin: { port: number; host: string };
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
  };
  logLevel: Env['LOG_LEVEL'];
  /** The triage page's sign-in through an identity provider (SPEC §15); none: a pasted token. */
  oidc: { issuer: string; clientId: string } | undefined;
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  if (e.PAGE_SIZE_DEFAULT > e.PAGE_SIZE_MAX) {
    throw new ConfigError('invalid configuration: PAGE_SIZE_DEFAULT must not exceed PAGE_SIZE_MAX');
  }
  if (e.CLICKHOUSE_CLUSTER !== undefined && e.CLICKHOUSE_URL === undefined) {
    throw new ConfigError('invalid configuration: CLICKHOUSE_CLUSTER needs a server (CLICKHOUSE_URL)');
  }
  if (e.CLICKHOUSE_CLUSTER !== undefined && e.CLICKHOUSE_LAYOUT === 'single') {
    throw new ConfigError('invalid configuration: CLICKHOUSE_CLUSTER holds the cluster layout (CLICKHOUSE_LAYOUT=cluster)');
  }
  if ((e.OIDC_ISSUER === undefined) !== (e.OIDC_CLIENT_ID === undefined)) {
    throw new ConfigError('invalid configuration: OIDC_ISSUER and OIDC_CLIENT_ID go together');
  }
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
      maxEventAgeDays: e.MAX_EVENT_AGE_DAYS,
    },
    pageSizeDefault: e.PAGE_SIZE_DEFAULT,
    pageSizeMax: e.PAGE_SIZE_MAX,
    maxReportBytes: e.MAX_REPORT_BYTES,
    admin: { port: e.ADMIN_PORT, host: e.ADMIN_HOST },
    dbApiAuth: e.DB_API_AUTH,
    queryTimeoutMs: e.QUERY_TIMEOUT_MS,
    jobs: { lockMs: e.JOB_LOCK_MS, maxStalls: e.JOB_MAX_STALLS },
    jwt: {
      secret: e.JWT_SECRET,
      publicKey: e.JWT_PUBLIC_KEY,
      issuer: e.JWT_ISSUER,
      audience: e.JWT_AUDIENCE,
    },
    logLevel: e.LOG_LEVEL,
    oidc: e.OIDC_ISSUER !== undefined && e.OIDC_CLIENT_ID !== undefined ? { issuer: e.OIDC_ISSUER, clientId: e.OIDC_CLIENT_ID } : undefined,
    slaPolicy: e.SLA_DAYS,
    webhooks: { allowPrivate: e.WEBHOOK_ALLOW_PRIVATE, maxSubscriptions: e.MAX_WEBHOOKS },
  };
}
