import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WriteStep } from '../src/ingest/batch-writes.js';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { report } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

/**
 * At least once across a crash (SPEC §9.1): a process that dies after a batch committed and before
 * its events were enqueued leaves the jobs to a retry that finds every report already stored. The
 * retry (recovery mode) describes the current state of the batch's findings instead: the same
 * events, with the same ids, as a service that never crashed sends.
 */

const opening = report({
  check_id: 'rec-1',
  target: 'recovery.example.com',
  end_time: '2024-02-01 10:00:00',
  vulnerabilities: [
    { summary: 'Recovery issue one', score: 9.1 },
    { summary: 'Recovery issue two', score: 3.2 },
  ],
});

let receiver: Receiver;
let clean: TestService;
let crashing: TestService;
const faults: { crashAfter: WriteStep; times: number; unqueued: number } = { crashAfter: 'sources', times: 0, unqueued: 0 };

async function subscribe(svc: TestService, path: string) {
  const res = await fetch(`${svc.metricsApiUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}${path}` }),
  });
  await json(res, 201);
}

beforeAll(async () => {
  receiver = await startReceiver();
  const env = { JWT_SECRET: METRICS_SECRET };
  clean = await startTestService({ env });
  crashing = await startTestService({ env, faults });
  await subscribe(clean, '/clean');
  await subscribe(crashing, '/crashing');
}, 60_000);

afterAll(async () => {
  await clean?.close();
  await crashing?.close();
  await receiver?.close();
});

describe('a batch whose process dies after the commit, before its events are enqueued', () => {
  it('is retried in recovery mode and sends the events a clean run sends, with the same ids', async () => {
    await json(clean.postJson('/checks', opening), 202);
    faults.times = 1; // the next batch crashes after its last write
    const { job_id } = await json(crashing.postJson('/checks', opening), 202);
    await Promise.all([clean.settle(), crashing.settle()]);
    const job = await crashing.queue!.getJob(job_id);
    expect(job!.attemptsStarted).toBe(2);
    expect(faults.times).toBe(0);

    await receiver.until(
      (all) => all.filter((r) => r.path === '/clean').length >= 2 && all.filter((r) => r.path === '/crashing').length >= 2,
    );
    const events = (path: string) =>
      receiver
        .on(path)
        .map((r) => [r.body.id, r.body.type, r.body.finding.id])
        .sort();
    expect(events('/crashing')).toEqual(events('/clean'));
    expect(events('/clean').map((e) => e[1])).toEqual(['finding.opened', 'finding.opened']);
  }, 90_000);
});

describe('a batch committed while the notifications queue refuses its events', () => {
  it('fails its jobs as transient; their retry sends the events a clean run sends, with the same ids', async () => {
    const fixing = report({ check_id: 'rec-2', target: 'recovery.example.com', end_time: '2024-02-02 10:00:00', vulnerabilities: [] });
    await json(clean.postJson('/checks', fixing), 202);
    faults.unqueued = 1; // the next committed batch's events are refused
    const { job_id } = await json(crashing.postJson('/checks', fixing), 202);
    await Promise.all([clean.settle(), crashing.settle()]);
    const job = await crashing.queue!.getJob(job_id);
    expect(job!.attemptsStarted).toBe(2);
    expect(faults.unqueued).toBe(0);

    const fixed = (path: string) => receiver.on(path).filter((r) => r.body.type === 'finding.fixed');
    await receiver.until(() => fixed('/clean').length >= 2 && fixed('/crashing').length >= 2);
    const events = (path: string) =>
      fixed(path)
        .map((r) => [r.body.id, r.body.finding.id])
        .sort();
    expect(events('/crashing')).toEqual(events('/clean'));
    expect(events('/clean')).toHaveLength(2);
  }, 90_000);
});
