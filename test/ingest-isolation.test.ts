import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import { enqueueBundles, enqueueReports } from '../src/queue/producer.js';
import type { NormalizedReport } from '../src/ingest/normalize.js';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * SPEC §3.3 item 6 and §3.7 (isolation): no report is rejected or made to fail for the characters
 * it holds, and a report that fails on its own never takes its batch mates down with it.
 */

const LONE = '\ud800';
const FFFD = '\ufffd';

/** A report whose strings hold unpaired surrogates in the target, summary, details and resources. */
function surrogateReport(i: number) {
  return report({
    check_id: `lone-${i}`,
    target: `lone${LONE}-${i}.example.com`,
    end_time: '2024-01-01 10:00:00',
    vulnerabilities: [
      {
        summary: `Weak cipher ${LONE}${i}`,
        score: 5,
        details: `cipher ${LONE} accepted`,
        resources: [{ Name: `ports${LONE}`, Header: ['port'], Rows: [{ port: `443${LONE}` }] }],
      },
    ],
  });
}

const valid = (i: number) =>
  report({ check_id: `valid-${i}`, target: `valid-${i}.example.com`, end_time: '2024-01-01 10:00:00', vulnerabilities: [V] });

async function finishedStates(jobs: Job[]) {
  return Promise.all(jobs.map(async (j) => ({ state: await j.getState(), reason: j.failedReason })));
}

describe('reports holding unpaired surrogates', () => {
  let svc: TestService;
  beforeAll(async () => {
    // A wait long enough that the six reports below form one batch.
    svc = await startTestService({ env: { INGEST_BATCH_WAIT_MS: '300' } });
  });
  afterAll(() => svc?.close());

  it('given three such reports before three valid ones in one batch, when ingested, then all six are stored', async () => {
    // Through POST /checks, as raw JSON text with the escapes a client would send.
    const bodies = [0, 1, 2].map((i) => JSON.stringify(surrogateReport(i)));
    expect(bodies[0]).toContain('\\ud800');
    for (const body of bodies) {
      const res = await svc.db('/checks', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      expect(res.status).toBe(202);
    }
    for (const i of [0, 1, 2]) await json(svc.postJson('/checks', valid(i)), 202);
    await svc.settle();
    expect(await svc.queue!.getFailedCount()).toBe(0);
    const size = await json(svc.db('/stats/size'));
    expect(size).toMatchObject({ size: { targets: 6, sources: 6 } });
  });

  it('given a stored surrogate report, when its finding is read, then every unpaired surrogate reads back as U+FFFD', async () => {
    const page = await json(svc.db(`/findings?identifier=${encodeURIComponent(`lone${FFFD}-1.example.com`)}&identifiermatch=true`));
    expect(page.findings).toHaveLength(1);
    const f = page.findings[0];
    expect(f.target.identifier).toBe(`lone${FFFD}-1.example.com`);
    expect(f.issue.summary).toBe(`Weak cipher ${FFFD}1`);
    expect(f.details).toBe(`cipher ${FFFD} accepted`);
    expect(f.resources).toEqual([{ name: `ports${FFFD}`, attributes: ['port'], resources: [{ port: `443${FFFD}` }] }]);
  });

  it('given a job added to the queue directly with unpaired surrogates, when processed, then it is stored too', async () => {
    const [id] = await enqueueReports(svc.queue!, [surrogateReport(9)]);
    await svc.settle();
    expect(await (await svc.queue!.getJob(id!))!.getState()).toBe('completed');
  });

  it('given POST /targets with an unpaired surrogate in the identifier, when sent, then it is created with U+FFFD', async () => {
    const body = `{"identifier": "x${'\\ud800'}", "teams": ["t${'\\udfff'}"]}`;
    const res = await svc.db('/targets', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ target: { identifier: `x${FFFD}`, teams: [`t${FFFD}`] } });
  });

  it('given POST /checks with a 10,000-level nested unused field, when sent, then it is accepted and the job carries the validated report only', async () => {
    const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    const body = JSON.stringify(valid(50)).replace(/^\{/, `{"notes": ${deep}, `);
    const res = await svc.db('/checks', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    expect(res.status).toBe(202);
    const { job_id } = (await res.json()) as { job_id: string };
    const job = await svc.queue!.getJob(job_id);
    expect(Object.keys(job!.data).sort()).toEqual(
      [
        'check_id',
        'checktype_name',
        'checktype_version',
        'end_time',
        'options',
        'start_time',
        'status',
        'tag',
        'target',
        'vulnerabilities',
      ].sort(),
    );
    await svc.settle();
  });
});

describe('a report the store refuses on its own', () => {
  let svc: TestService;
  const poisonTarget = 'poison.example.com';
  beforeAll(async () => {
    svc = await startTestService({
      env: { INGEST_BATCH_WAIT_MS: '300' },
      faults: { crashAfter: 'sources', times: 0, poison: (r: NormalizedReport) => r.identifier === poisonTarget },
    });
  });
  afterAll(() => svc?.close());

  it('given one poison report among five valid ones in one batch, when ingested, then it alone fails, without retry and with its reason, and the others are stored', async () => {
    const reports = [
      valid(1),
      valid(2),
      report({ check_id: 'p-1', target: poisonTarget, end_time: '2024-01-01 10:00:00', vulnerabilities: [V] }),
      valid(3),
      valid(4),
      valid(5),
    ];
    const ids = await enqueueReports(svc.queue!, reports);
    await svc.settle();
    const jobs = await Promise.all(ids.map((id) => svc.queue!.getJob(id)));
    const states = await finishedStates(jobs as Job[]);
    expect(states.map((s) => s.state)).toEqual(['completed', 'completed', 'failed', 'completed', 'completed', 'completed']);
    expect(states[2]!.reason).toMatch(/the store refused this report: .*injected failure of a poison report/);
    expect(jobs[2]!.attemptsMade).toBeLessThanOrEqual(1);
    expect(await json(svc.db('/stats/size'))).toMatchObject({ size: { targets: 5, sources: 5 } });
  });

  it('given a bundle holding a poison report, when ingested, then the bundle fails naming it and its other reports are stored', async () => {
    const bundle = { reports: [valid(11), report({ check_id: 'p-2', target: poisonTarget, end_time: '2024-01-02 10:00:00' }), valid(12)] };
    const [id] = await enqueueBundles(svc.bulk, [bundle]);
    await svc.settle();
    const job = await svc.bulk.getJob(id!);
    expect(await job!.getState()).toBe('failed');
    expect(job!.failedReason).toMatch(/^1 of 3 reports refused \(the others are stored\): reports\[1\]: the store refused this report/);
    expect(await json(svc.db('/stats/size'))).toMatchObject({ size: { targets: 7, sources: 7 } });
  });
});
