import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

const valid = report({ check_id: 'valid-1', end_time: '2024-01-01 10:00:00', vulnerabilities: [V] });
const vuln = (patch: Record<string, unknown>) => ({ ...valid, vulnerabilities: [{ ...V, ...patch }] });
const without = (field: string) => Object.fromEntries(Object.entries(valid).filter(([k]) => k !== field));

// One or more cases per rule of SPEC §3.3, each with a fragment of the reason it must give.
const malformed: [string, unknown, string][] = [
  ['not an object (array)', [valid], 'JSON object'],
  ['not an object (string)', 'report', 'JSON object'],
  ['not an object (null)', null, 'JSON object'],
  ['status missing', without('status'), 'status'],
  ['status not a string', { ...valid, status: 1 }, 'status'],
  ['rule 1: check_id missing', without('check_id'), 'check_id'],
  ['rule 1: check_id empty', { ...valid, check_id: '' }, 'check_id'],
  ['rule 1: checktype_name not a string', { ...valid, checktype_name: 7 }, 'checktype_name'],
  ['rule 1: target empty', { ...valid, target: '' }, 'target'],
  ['rule 2: options not a string', { ...valid, options: { timeout: 60 } }, 'options'],
  ['rule 2: tag not a string', { ...valid, tag: ['a'] }, 'tag'],
  ['rule 2: checktype_version not a string', { ...valid, checktype_version: 1 }, 'checktype_version'],
  ['rule 3: end_time unparseable', { ...valid, end_time: 'yesterday' }, 'end_time'],
  ['rule 3: end_time not a real date', { ...valid, end_time: '2024-02-30 10:00:00' }, 'end_time'],
  ['rule 3: start_time unparseable', { ...valid, start_time: '2024/01/01' }, 'start_time'],
  ['rule 3: no time at all', { ...valid, start_time: '', end_time: null }, 'end_time or start_time'],
  ['rule 3: bad offset', { ...valid, end_time: '2024-01-01T10:00:00+25:00' }, 'end_time'],
  ['rule 4: vulnerabilities not an array', { ...valid, vulnerabilities: 'none' }, 'vulnerabilities'],
  ['rule 4: vulnerability not an object', { ...valid, vulnerabilities: [null] }, 'vulnerabilities[0]'],
  ['rule 5: summary missing', vuln({ summary: undefined }), 'vulnerabilities[0].summary'],
  ['rule 5: summary empty', vuln({ summary: '' }), 'vulnerabilities[0].summary'],
  ['rule 5: score above 10', vuln({ score: 10.5 }), 'vulnerabilities[0].score'],
  ['rule 5: score negative', vuln({ score: -1 }), 'vulnerabilities[0].score'],
  ['rule 5: score a string', vuln({ score: '5' }), 'vulnerabilities[0].score'],
  ['rule 5: cwe_id fractional', vuln({ cwe_id: 79.5 }), 'vulnerabilities[0].cwe_id'],
  ['rule 5: cwe_id negative', vuln({ cwe_id: -1 }), 'vulnerabilities[0].cwe_id'],
  ['rule 5: cwe_id too large', vuln({ cwe_id: 2147483648 }), 'vulnerabilities[0].cwe_id'],
  ['rule 5: description not a string', vuln({ description: 5 }), 'vulnerabilities[0].description'],
  ['rule 5: details not a string', vuln({ details: {} }), 'vulnerabilities[0].details'],
  ['rule 5: recommendations not an array', vuln({ recommendations: 'patch' }), 'vulnerabilities[0].recommendations'],
  ['rule 5: references with a number', vuln({ references: [1] }), 'vulnerabilities[0].references[0]'],
  ['rule 5: labels with null', vuln({ labels: [null] }), 'vulnerabilities[0].labels[0]'],
  ['rule 5: resources header not strings', vuln({ resources: [{ Name: 'P', Header: 'Port', Rows: [] }] }), 'header'],
  ['rule 5: resources row value not a string', vuln({ resources: [{ name: 'P', header: ['Port'], rows: [{ Port: 443 }] }] }), 'rows'],
  // A later bad vulnerability rejects the whole report, good ones included.
  ['rule 5: second vulnerability bad', { ...valid, vulnerabilities: [V, { ...V, score: 11 }] }, 'vulnerabilities[1].score'],
];

describe('invalid reports are rejected whole and change nothing', () => {
  let svc: TestService;
  let sizeBefore: unknown;

  beforeAll(async () => {
    svc = await startTestService();
    sizeBefore = (await json(svc.db('/stats/size'))).size;
  });
  afterAll(() => svc.close());

  it.each(malformed)('POST /checks with %s answers 400 with the reason', async (_name, body, reason) => {
    const res = await json(svc.postJson('/checks', body), 400);
    expect(res.message).toContain(reason);
  });

  it.each(malformed)('a queued job with %s fails without retry', async (_name, body, reason) => {
    // The producer asks for retries; the worker must still not retry an invalid report.
    const job = await svc.queue!.add('report', body, { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
    await svc.settle();
    const done = await svc.queue!.getJob(job.id!);
    expect(await done!.getState()).toBe('failed');
    expect(done!.attemptsMade).toBe(1);
    expect(done!.failedReason).toContain(reason);
  });

  it('stores nothing for any of them', async () => {
    await svc.settle();
    expect((await json(svc.db('/stats/size'))).size).toEqual(sizeBefore);
    expect(sizeBefore).toEqual({ sources: 0, targets: 0, issues: 0, findings: 0, finding_events: 0 });
  });

  it('accepts the forms SPEC §3.2 allows: null as absent, case-insensitive resource keys, 79.0 as a CWE, offsets', async () => {
    const forms = [
      { ...valid, check_id: 'f1', options: null, tag: null, checktype_version: null, vulnerabilities: null },
      vuln({ cwe_id: 79.0, description: null, labels: null, resources: [{ NAME: 'Ports', header: ['Port'], ROWS: [{ Port: '443' }] }] }),
      { ...valid, check_id: 'f3', end_time: '', start_time: '2024-01-01T11:00:00.123+01:00' },
      { ...valid, check_id: 'f4', end_time: '2024-01-01t10:00:00z' },
    ];
    for (const f of forms) await json(svc.postJson('/checks', f), 202);
    await svc.settle();
    expect((await json(svc.db('/stats/size'))).size.sources).toBe(4);
  });

  it('accepts and ignores a report whose status is not FINISHED, whatever else it holds', async () => {
    const before = (await json(svc.db('/stats/size'))).size;
    await json(svc.postJson('/checks', { status: 'RUNNING', vulnerabilities: 'garbage' }), 202);
    const job = await svc.queue!.add('report', { status: 'FAILED', target: 3 });
    await svc.settle();
    expect(await (await svc.queue!.getJob(job.id!))!.getState()).toBe('completed');
    expect((await json(svc.db('/stats/size'))).size).toEqual(before);
  });

  it('rejects bodies that are not JSON (400), not JSON typed (415) or too large (413)', async () => {
    // A byte body makes fetch send no Content-Type of its own.
    const post = (body: string, headers: Record<string, string>) =>
      svc.db('/checks', { method: 'POST', headers, body: new TextEncoder().encode(body) });
    expect((await json(post('{"status":', { 'Content-Type': 'application/json' }), 400)).message).toMatch(/not valid JSON/);
    expect(await json(post('{}', { 'Content-Type': 'text/plain' }), 415)).toEqual({ message: 'Unsupported Media Type' });
    await json(post(JSON.stringify({ status: 'RUNNING' }), { 'Content-Type': 'application/json; charset=utf-8' }), 202);
    await json(post(JSON.stringify({ status: 'RUNNING' }), {}), 202); // no Content-Type: parsed as JSON
  });
});

describe('request size limit', () => {
  it('answers 413 above MAX_REPORT_BYTES and enqueues nothing', async () => {
    const svc = await startTestService({ env: { MAX_REPORT_BYTES: '2048' }, worker: false });
    try {
      const big = { ...valid, vulnerabilities: [{ ...V, details: 'x'.repeat(4096) }] };
      expect(await json(svc.postJson('/checks', big), 413)).toEqual({ message: 'Request Entity Too Large' });
      expect(await svc.queue!.getJobCounts('waiting')).toEqual({ waiting: 0 });
    } finally {
      await svc.close();
    }
  });
});
