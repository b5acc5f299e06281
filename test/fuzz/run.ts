/**
 * npm run fuzz -- [--requests N] [--seed S] [--path P] [--batch B] [--reads R] [--only reads,writes,metrics,unknown,bodies] [--db-auth]
 *
 * The fuzz campaign of test/fuzz.test.ts at any length (issue 21): starts the service in this
 * process (embedded engine in a temporary folder, the Redis of REDIS_URL (default 127.0.0.1:6379) under key prefixes of
 * its own, removed at the end), loads the API test catalog, stops the ingest workers (accepted
 * reports stay queued) and sends N generated requests (default 10,000) with a random seed unless
 * --seed is given; then checks /stats/size and the queued jobs, ingests the accepted reports (no job
 * may fail) and sends R reads (default N/4, seed S+1) over what they stored. Every distinct failure
 * is printed once with its count and the seed and path that replay it; with --path the run replays
 * that batch of the first campaign under fast-check, which shrinks it to the failing request. Exit
 * status 1 when anything failed.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startService } from '../../src/service.js';
import { loadCatalog } from '../support/api-catalog.js';
import {
  assertCampaign,
  ingestQueued,
  withStoredIds,
  type CampaignOptions,
  collectCampaign,
  describeClasses,
  fuzzClient,
  fuzzContext,
  FUZZ_SECRET,
  newLedger,
  queueProblems,
  REQUEST_KINDS,
  sizeOf,
  sizeProblem,
  type RequestKind,
} from '../support/fuzz-requests.js';
import { decisionProblems, startHookReceiver } from '../support/fuzz-bodies.js';

const args = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const requests = Number(arg('requests') ?? 10_000);
const seed = Number(arg('seed') ?? Math.floor(Math.random() * 2 ** 31));
const replayPath = arg('path');
const reads = Number(arg('reads') ?? Math.ceil(requests / 4));
// --db-auth: the database API runs with DB_API_AUTH=jwt and the requests carry tokens (SPEC §5.1).
const dbAuth = args.includes('--db-auth');
const batch = Number(arg('batch') ?? 8);
// --only reads,writes,metrics,unknown,bodies: some kinds of request only.
const only = (arg('only') ?? REQUEST_KINDS.join(',')).split(',') as RequestKind[];
if (!Number.isInteger(requests) || requests < 1 || !Number.isInteger(seed) || !Number.isInteger(batch) || batch < 1) {
  console.error(
    'usage: npm run fuzz -- [--requests N] [--seed S] [--path P] [--batch B] [--reads R] [--only reads,writes,metrics,unknown,bodies] [--db-auth]',
  );
  process.exit(2);
}

const REDIS_URL = process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379';
const id = randomUUID().slice(0, 8);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-fuzz-'));
const config = loadConfig({
  DATA_DIR: path.join(dir, 'data'),
  DB_API_PORT: '0',
  METRICS_API_PORT: '0',
  HOST: '127.0.0.1',
  REDIS_URL,
  INGEST_BATCH_WAIT_MS: '5',
  JWT_SECRET: FUZZ_SECRET,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
  ...(dbAuth ? { DB_API_AUTH: 'jwt' } : {}),
});
config.store = { url: undefined, database: `fuzz_${id}`, user: 'default', password: '', embeddedPath: path.join(dir, 'clickhouse') };
const names = { queuePrefix: `bull-fuzz-${id}`, keyPrefix: `vulndb-fuzz-${id}` };

const log = createLogger(config.logLevel);
const service = await startService(config, { api: true, worker: true, log, names });
const queue = service.queue!;
const settle = async (timeoutMs = 300_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    if (Object.values(c).every((n) => n === 0)) return;
    if (Date.now() > deadline) throw new Error(`the queue did not settle: ${JSON.stringify(c)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
const admin = `Bearer ${fuzzContext(0).tokens.admin}`;
const db = (p: string, init: RequestInit = {}) =>
  fetch(`${service.dbApiUrl}${p}`, { ...init, headers: { ...(init.headers as Record<string, string>), Authorization: admin } });
const client = fuzzClient({ db: service.dbApiUrl!, metrics: service.metricsApiUrl! }, { sockets: batch, timeoutMs: 60_000 });
const say = (line: string) => console.log(`  ${line}`);
// Deliveries to the webhooks the campaign subscribes succeed at once (no retries pile up).
const hooks = await startHookReceiver();

/** One campaign: replays a path under fast-check, or collects every distinct failure. Returns whether all passed. */
async function campaign(label: string, o: Omit<CampaignOptions, 'client' | 'batch' | 'log'>): Promise<boolean> {
  console.log(
    `\n${label}: seed ${o.seed}, ${o.requests} requests in batches of ${batch}${o.path !== undefined ? `, replaying path "${o.path}"` : ''}`,
  );
  if (o.path !== undefined) {
    try {
      await assertCampaign({ ...o, client, batch, log: say });
      console.log('the replayed batch passes');
      return true;
    } catch (err) {
      console.log((err as Error).message);
      return false;
    }
  }
  const started = performance.now();
  const cpu = process.cpuUsage();
  const classes = await collectCampaign({ ...o, client, batch, log: say });
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const ledger = o.ledger;
  console.log(
    `${ledger.requests} requests in ${seconds.toFixed(1)} s (${Math.round(ledger.requests / seconds)}/s), ${((used.user + used.system) / 1e6).toFixed(1)} s of CPU; statuses ${JSON.stringify(Object.fromEntries([...ledger.byStatus].sort((a, b) => a[0] - b[0])))}`,
  );
  console.log(`slowest: ${ledger.slowest.map((x) => `\n  ${x.ms} ms ${x.req}`).join('')}`);
  const costly = [...ledger.time].sort((x, y) => y[1].ms - x[1].ms).slice(0, 8);
  console.log(
    `most time: ${costly.map(([k, t]) => `\n  ${Math.round(t.ms)} ms in ${t.n} (${(t.ms / t.n).toFixed(1)} ms each) ${k}`).join('')}`,
  );
  if (classes.length > 0) console.log(`\n${classes.length} distinct failures:\n${describeClasses(o.seed, classes)}`);
  return classes.length === 0;
}

let failed = false;
try {
  const postJson = (p: string, body: unknown) =>
    db(p, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  await loadCatalog({ postJson, settle });
  // From here on accepted reports stay in the queue: the store changes only by POST /targets.
  await Promise.all(service.workers.map((w) => w.close()));
  const before = await sizeOf(db);

  // 1. Every kind of request; writes are queued, not applied.
  const ledger = newLedger();
  const ctx = { ...fuzzContext(config.maxReportBytes), dbAuth, hookBase: hooks.url };
  if (!(await campaign('requests', { ctx, requests, seed, path: replayPath, ledger, only }))) failed = true;
  const problems = [
    await sizeProblem(db, ledger, before),
    ...(await queueProblems(queue, ledger)),
    ...(await decisionProblems(service.metricsApiUrl!, ctx.tokens.admin, ctx.ids.finding)),
  ].filter((p) => p !== undefined);
  for (const line of problems) console.log(`after the campaign: ${line}`);
  if (problems.length > 0) failed = true;
  console.log(
    `${ledger.jobs.length} reports accepted, ${ledger.targets.size} targets answered 201; the store and the queue ${problems.length > 0 ? 'do not match them' : 'match them'}`,
  );

  // 2. The accepted reports ingested: none may fail. 3. Reads of what they stored.
  if (replayPath === undefined && reads > 0) {
    const ingest = await ingestQueued({ batcher: service.batcher!, queue, names, config, log, settle });
    for (const line of ingest.failed) console.log(`ingestion: ${line}`);
    if (ingest.failed.length > 0) failed = true;
    console.log(
      `ingestion: ${ledger.jobs.length} reports, ${ingest.failed.length} failed jobs; size now ${JSON.stringify(await sizeOf(db))}`,
    );
    await ingest.close();
    const stored = await withStoredIds(ctx, db);
    if (
      !(await campaign('reads of the ingested reports', {
        ctx: stored,
        requests: reads,
        seed: seed + 1,
        ledger: newLedger(),
        only: ['reads', 'metrics'],
      }))
    )
      failed = true;
  }
} finally {
  client.close();
  await service.close();
  await hooks.close();
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  for (const prefix of [names.queuePrefix, names.keyPrefix]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  redis.disconnect();
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
console.log(failed ? 'fuzz: FAILED' : 'fuzz: passed');
process.exit(failed ? 1 : 0);
