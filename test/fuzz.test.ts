import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { loadCatalog } from './support/api-catalog.js';
import {
  assertCampaign,
  fuzzClient,
  fuzzContext,
  FUZZ_SECRET,
  ingestQueued,
  newLedger,
  queueProblems,
  sizeOf,
  sizeProblem,
  withStoredIds,
  type FuzzContext,
  type SizeStats,
} from './support/fuzz-requests.js';
import { decisionProblems, startHookReceiver } from './support/fuzz-bodies.js';
import { startTestService } from './support/service.js';

/**
 * Issue 21: fuzz campaigns over every route of both APIs (test/support/fuzz-requests.ts; the
 * decision, webhook and import bodies of issue 31 in test/support/fuzz-bodies.ts). Hostile
 * requests — wrong types, lone surrogates, SQL and ClickHouse parameter syntax, repeated keys, deep
 * nesting, odd numbers and dates, ids that are and are not UUIDs, percent-encoding oddities,
 * hundreds of parameters, thousands of slashes, wrong methods and media types — never get a 5xx,
 * every error has the SPEC's body, and the writes leave exactly what their answers say.
 *
 * The service's ingest workers stop once the catalog is loaded, so every accepted report stays in
 * the queue: the store may change only by the targets POST /targets creates, and each queued job
 * can be read back. Then workers ingest the queued reports (none may fail, SPEC §3.3 item 6) and a
 * second campaign reads what they stored through both APIs. A third, shorter campaign runs against
 * a database API with DB_API_AUTH=jwt. The seed is fixed (FUZZ_SEED overrides it; FUZZ_PATH replays
 * a counterexample of the first campaign; `npm run fuzz` runs campaigns of any length with random
 * seeds). The campaigns here are sized so that `npm test` stays near ten minutes on the 2-core host;
 * FUZZ_REQUESTS, FUZZ_READS and FUZZ_AUTH_REQUESTS make them longer.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 21);
const PATH = process.env.FUZZ_PATH;
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 3_500);
const READS = Number(process.env.FUZZ_READS ?? 1_000);
const AUTH_REQUESTS = Number(process.env.FUZZ_AUTH_REQUESTS ?? 1_000);
const BATCH = 8;

const hint = `replay a failure: FUZZ_SEED=<seed> FUZZ_PATH=<path> npx vitest run test/fuzz.test.ts, or npm run fuzz -- --seed <seed> --path <path>`;

/** The service, its catalog loaded and its workers stopped; requests of the test carry an admin token. */
async function fuzzTarget(env: Record<string, string>) {
  const ctx: FuzzContext = { ...fuzzContext(0), dbAuth: env.DB_API_AUTH === 'jwt' };
  const svc = await startTestService({ env: { JWT_SECRET: FUZZ_SECRET, ...env } });
  ctx.maxReportBytes = svc.config.maxReportBytes;
  const db = (path: string, init: RequestInit = {}) =>
    svc.db(path, { ...init, headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${ctx.tokens.admin}` } });
  const postJson = (path: string, body: unknown) =>
    db(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  await loadCatalog({ postJson, settle: svc.settle });
  // From here on accepted reports stay queued.
  await Promise.all(svc.workers.map((w) => w.close()));
  const before = await sizeOf(db);
  const client = fuzzClient({ db: svc.dbApiUrl!, metrics: svc.metricsApiUrl! }, { sockets: BATCH, timeoutMs: 60_000 });
  const hooks = await startHookReceiver();
  ctx.hookBase = hooks.url;
  return { svc, ctx, db, before, client, hooks };
}

describe('the fuzz campaign of both APIs', () => {
  let t: Awaited<ReturnType<typeof fuzzTarget>>;
  let stopWorkers: (() => Promise<void>) | undefined;
  const ledger = newLedger();

  beforeAll(async () => {
    t = await fuzzTarget({});
  });
  afterAll(async () => {
    t?.client.close();
    await stopWorkers?.();
    await t?.svc.close();
    await t?.hooks.close();
  });

  it(`answers ${REQUESTS} generated requests without a 5xx, with the SPEC's error bodies and JSON (seed ${SEED})`, async () => {
    console.log(`fuzz: seed ${SEED}${PATH !== undefined ? `, path "${PATH}"` : ''}, ${REQUESTS} requests in batches of ${BATCH} (${hint})`);
    const started = performance.now();
    await assertCampaign({ client: t.client, ctx: t.ctx, requests: REQUESTS, seed: SEED, batch: BATCH, path: PATH, ledger });
    const statuses = Object.fromEntries([...ledger.byStatus].sort((a, b) => a[0] - b[0]));
    console.log(
      `fuzz: ${ledger.requests} requests in ${((performance.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify(statuses)}`,
    );
    if (PATH === undefined) expect(ledger.requests).toBeGreaterThanOrEqual(REQUESTS);
  }, 900_000);

  it('leaves /stats/size as before but for the targets POST /targets answered 201 for', async () => {
    expect(await sizeProblem(t.db, ledger, t.before)).toBeUndefined();
  });

  it('leaves the decisions its concurrent writes made on each finding one after another: at most one unrevoked, the newest', async () => {
    expect(await decisionProblems(t.svc.metricsApiUrl!, t.ctx.tokens.admin, t.ctx.ids.finding)).toEqual([]);
  });

  it('queues one job per accepted report, each the validated report (the fields of SPEC §3.2 only, any text well formed)', async () => {
    if (PATH === undefined) expect(ledger.jobs.length).toBeGreaterThan(REQUESTS / 100);
    expect(await queueProblems(t.svc.queue!, ledger)).toEqual([]);
  });

  it('ingests every accepted report: no job fails for what its report holds', async () => {
    const ingest = await ingestQueued({ ...t.svc, batcher: t.svc.batcher!, queue: t.svc.queue!, log: createLogger('silent') });
    stopWorkers = ingest.close;
    expect(ingest.failed).toEqual([]);
  }, 300_000);

  it(`answers ${READS} generated reads of what the fuzzed reports stored, by both APIs, as the SPEC says (seed ${SEED + 1})`, async () => {
    const ctx = await withStoredIds(t.ctx, t.db);
    const reads = newLedger();
    await assertCampaign({
      client: t.client,
      ctx,
      requests: READS,
      seed: SEED + 1,
      batch: BATCH,
      ledger: reads,
      only: ['reads', 'metrics'],
    });
    console.log(
      `fuzz: ${reads.requests} reads of ${ctx.ids.finding.length} findings, ${ctx.ids.issue.length} issues, ${ctx.ids.target.length} targets, ${ctx.ids.source.length} sources`,
    );
    expect(reads.requests).toBeGreaterThanOrEqual(READS);
  }, 900_000);
});

describe('the fuzz campaign of a database API with DB_API_AUTH=jwt', () => {
  let t: Awaited<ReturnType<typeof fuzzTarget>>;
  let before: SizeStats;
  const ledger = newLedger();

  beforeAll(async () => {
    t = await fuzzTarget({ DB_API_AUTH: 'jwt' });
    before = t.before;
  });
  afterAll(async () => {
    t?.client.close();
    await t?.svc.close();
    await t?.hooks.close();
  });

  it(`answers ${AUTH_REQUESTS} generated requests with and without tokens: 401 without, 403 for writes without the right, never a 5xx (seed ${SEED + 2})`, async () => {
    await assertCampaign({
      client: t.client,
      ctx: t.ctx,
      requests: AUTH_REQUESTS,
      seed: SEED + 2,
      batch: BATCH,
      ledger,
      only: ['reads', 'writes', 'unknown'],
    });
    expect(ledger.requests).toBeGreaterThanOrEqual(AUTH_REQUESTS);
  }, 900_000);

  it('leaves the store and the queue as the accepted writes say', async () => {
    expect(await sizeProblem(t.db, ledger, before)).toBeUndefined();
    expect(await queueProblems(t.svc.queue!, ledger)).toEqual([]);
  });
});
