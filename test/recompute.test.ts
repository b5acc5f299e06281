import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { bumpAllData } from '../src/cache/data-version.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recomputeFindings, UnknownTarget } from '../src/ingest/recompute.js';
import { LockTimeout } from '../src/locks/target-locks.js';
import { keys } from '../src/queue/redis.js';
import type { Store } from '../src/storage/gateway.js';
import { ingest } from './support/api.js';
import * as catalog from './support/api-catalog.js';
import { testDataDir } from './support/engine.js';
import { report } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import { contextFromHistory, countsFromFindings, snapshot, storedContext } from './support/snapshot.js';

/**
 * `vulndb recompute` (src/ingest/recompute.ts): a store whose derived state was made wrong on
 * purpose is rebuilt from its history to exactly what a clean run of the same history holds.
 */

const { T1, T2, T3, T4, I1, I2, I3, TEAM_A, TEAM_B } = catalog;
const NOW = Date.parse(catalog.NOW) / 1000;

// The catalog's history, plus a second family on T2 (it detects I1 and then no longer does), an
// out-of-order report of T1 and a re-detection of T1/I1 after its fix.
const history = [
  ...catalog.reports,
  report({ check_id: 'tls-1', target: T2, checktype_name: 'vulcan-tls', end_time: '2024-02-06 00:00:00', vulnerabilities: [I1] }),
  report({ check_id: 'tls-2', target: T2, checktype_name: 'vulcan-tls', end_time: '2024-02-12 00:00:00', vulnerabilities: [] }),
  report({ check_id: 'c0', checktype_name: 'vulcan-web', target: T1, end_time: '2024-01-20 10:00:00', vulnerabilities: [I1] }),
  report({ check_id: 'c8', checktype_name: 'vulcan-web', target: T1, end_time: '2024-02-20 10:00:00', vulnerabilities: [I1, I2] }),
];

/**
 * Appends a wrong version of a finding, as a faulty derivation would have: `changes` replaces
 * columns (SQL over the stored row; texts become the enums by the insert's cast), and the row says
 * which state it replaces, so the counters follow the wrong state as they would have.
 */
async function corrupt(store: Store, id: string, changes: string): Promise<void> {
  await store.command(
    `INSERT INTO findings
     SELECT * REPLACE (version + 1 AS version, toString(status) AS prev_status, severity AS prev_severity, ${changes})
     FROM findings FINAL WHERE id = {id:UUID}`,
    { id },
  );
}

/** Shows an older FOUND event as the finding's latest one. */
async function corruptLatest(store: Store, id: string): Promise<void> {
  await store.command(
    `INSERT INTO finding_latest_events
     SELECT finding_id, time, check_id, pos, source_id, toString(source_name), toString(component), toString(options), details,
            impact_details, resources, affected_resource_string
     FROM finding_events WHERE finding_id = {id:UUID} ORDER BY time, check_id LIMIT 1`,
    { id },
  );
}

/** Three findings made wrong: a status flipped, a score and severity changed, a family's periods lost. */
async function corruptThree(store: Store) {
  await corrupt(store, catalog.fid(T3, I2), `'FIXED' AS status, [toDateTime('2024-02-20 00:00:00', 'UTC')] AS fixed_at`);
  await corrupt(store, catalog.fid(T2, I3), `8.0 AS score, 'high' AS severity`);
  await corrupt(
    store,
    catalog.fid(T2, I1),
    'arraySlice(family_periods, 1, 1) AS family_periods, arraySlice(family_ids, 1, 1) AS family_ids, 7 AS ttr_sum',
  );
}

const PATHS = [
  '/findings?size=100',
  '/findings?status=OPEN&size=100',
  '/findings?status=FIXED&size=100',
  `/findings?team=${TEAM_A}&size=100`,
  `/findings?teams=${TEAM_A},${TEAM_B}&size=100`,
  '/findings?minScore=7&size=100',
  '/stats/open',
  '/stats/fixed',
  `/stats/open?team=${TEAM_B}`,
  '/stats/issues',
  '/stats/mttr',
  '/stats/size',
  '/stats/assets',
  '/stats/exposure',
  '/stats/exposure/current',
  `/targets/${catalog.tid(T1)}/findings`,
  `/issues/${catalog.iid(I1)}/findings`,
];

async function answers(svc: TestService) {
  const out: Record<string, unknown> = {};
  for (const p of PATHS) out[p] = await json(svc.db(p));
  return out;
}

async function findingVersions(store: Store) {
  const [row] = await store.query<{ n: number; v: number }>('SELECT count() AS n, max(version) AS v FROM findings');
  return row!;
}

let clean: TestService;
let broken: TestService;

async function load(svc: TestService) {
  for (const [target, teams] of Object.entries(catalog.teamsOf)) await json(svc.postJson('/targets', { identifier: target, teams }), 201);
  await ingest(svc, history);
}

beforeAll(async () => {
  clean = await startTestService({ now: () => NOW });
  broken = await startTestService({ now: () => NOW });
  await load(clean);
  await load(broken);
}, 60_000);
afterAll(async () => {
  await clean?.close();
  await broken?.close();
});

describe('vulndb recompute', () => {
  it('given a clean run, when both stores are read, then they agree (the baseline of the other tests)', async () => {
    expect(await snapshot(broken.store)).toEqual(await snapshot(clean.store));
  });

  it('given findings, counters and latest events made wrong, when recomputed, then every list and statistic equals a clean run', async () => {
    await corruptThree(broken.store);
    await corruptLatest(broken.store, catalog.fid(T4, I3));
    const version = () => broken.redis.get(keys.dataVersion(broken.names)).then(Number);
    const versionBefore = await version();
    const wrong = await answers(broken);
    const expected = await answers(clean);
    expect(wrong['/stats/open']).not.toEqual(expected['/stats/open']);

    const progress: number[] = [];
    const result = await recomputeFindings(broken.store, broken.locks, {
      chunkSize: 2,
      onProgress: (p) => progress.push(p.targets),
      // As `vulndb recompute` does: every cached answer, team-scoped ones included, is refreshed.
      onChanged: () => bumpAllData(broken.redis, broken.names),
    });

    expect(result).toMatchObject({ targets: 4, total: 4, versions: 3, statusChanges: 1, latestEvents: 1, orphans: 0 });
    expect(progress).toEqual([0, 2, 4]);
    // The cached answers were invalidated (data version bumped by the steps that changed something).
    expect(await version()).toBeGreaterThan(versionBefore);
    expect(await answers(broken)).toEqual(expected);
    expect(await snapshot(broken.store)).toEqual(await snapshot(clean.store));
    expect(await countsFromFindings(broken.store)).toEqual(await countsFromFindings(clean.store));
    expect(await storedContext(broken.store)).toEqual(await contextFromHistory(broken.store));
    expect(await storedContext(broken.store)).toEqual(await storedContext(clean.store));
  });

  it('given a target identifier, when recomputed, then only that target is rebuilt', async () => {
    await corrupt(broken.store, catalog.fid(T1, I2), '1.0 AS score');
    await corrupt(broken.store, catalog.fid(T4, I3), '[] AS found_at, [] AS fixed_at');

    const one = await recomputeFindings(broken.store, broken.locks, { target: T1 });
    expect(one).toMatchObject({ targets: 1, total: 1, versions: 1 });
    const [t4] = await broken.store.query<{ found: number[] }>('SELECT found_at AS found FROM findings FINAL WHERE id = {id:UUID}', {
      id: catalog.fid(T4, I3),
    });
    expect(t4!.found).toEqual([]); // still wrong: not its target

    expect(await recomputeFindings(broken.store, broken.locks)).toMatchObject({ versions: 1 });
    expect(await snapshot(broken.store)).toEqual(await snapshot(clean.store));
  });

  it('given a store that is right, when recomputed, then it writes no finding version and no latest event', async () => {
    const before = await findingVersions(clean.store);
    let changed = 0;
    const result = await recomputeFindings(clean.store, clean.locks, { onChanged: async () => void (changed += 1) });
    expect(result).toMatchObject({ targets: 4, total: 4, findings: 8, versions: 0, statusChanges: 0, latestEvents: 0, orphans: 0 });
    expect(changed).toBe(0);
    expect(await findingVersions(clean.store)).toEqual(before);
  });

  it('given an unknown target identifier, when recomputed, then it fails naming it', async () => {
    await expect(recomputeFindings(clean.store, clean.locks, { target: 'nowhere.example.com' })).rejects.toBeInstanceOf(UnknownTarget);
  });

  it('given a target whose ingest lock is held elsewhere, when recomputed, then it waits for it and gives up at the timeout', async () => {
    const held = await clean.locks.acquire([catalog.tid(T4)]);
    try {
      await expect(recomputeFindings(clean.store, clean.locks, { target: T4, lockTimeoutMs: 300 })).rejects.toBeInstanceOf(LockTimeout);
    } finally {
      await held.release();
    }
    expect(await recomputeFindings(clean.store, clean.locks, { target: T4 })).toMatchObject({ targets: 1, versions: 0 });
  });
});

describe('vulndb recompute as a command', () => {
  const run = promisify(execFile);
  const bin = path.resolve('bin/vulndb.mjs');

  it('runs on a store of its own with a summary, and exits with code 1 for an unknown target', async () => {
    // No Redis: embedded mode needs none (in-process locks), and no one else's keys are touched.
    const env = {
      ...process.env,
      DATA_DIR: path.join(testDataDir(), 'cli-recompute'),
      REDIS_URL: 'redis://127.0.0.1:1',
      LOG_LEVEL: 'error',
    };
    const ok = await run(process.execPath, [bin, 'recompute', '--json'], { env });
    expect(JSON.parse(ok.stdout)).toMatchObject({ targets: 0, total: 0, findings: 0, versions: 0 });
    expect(ok.stderr).toContain('targets 0/0');

    const failed = await run(process.execPath, [bin, 'recompute', '--target', 'nowhere.example.com'], { env }).catch((e) => e);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('no target with the identifier "nowhere.example.com"');
  }, 60_000);
});
