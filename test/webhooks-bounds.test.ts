import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSubscription } from '../src/notifications/subscriptions.js';
import { deliveryJobId, dispatchJobOptions, NOTIFICATIONS_QUEUE } from '../src/queue/contract.js';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

/**
 * Deliveries end to end under SPEC §9.1's policy and bounds: a subscription stored while private
 * addresses were allowed is refused at connect time once they are not (failed at once, not
 * retried, nothing received); failed deliveries are kept 7 days and the latest 10,000; the
 * delivery metrics (outcome, latency, backlog) are on the admin listener's /metrics.
 */

const SEVEN_DAYS = 7 * 24 * 3600;

let strict: TestService;
let open: TestService;
let receiver: Receiver;
const queues: Queue[] = [];

const queueOf = (svc: TestService) => {
  const q = new Queue(NOTIFICATIONS_QUEUE, { connection: svc.redis, prefix: svc.names.queuePrefix });
  queues.push(q);
  return q;
};

/** Waits for a job of `queue` to reach `state`; returns the job. */
async function jobIn(queue: Queue, id: string, state: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while ((await queue.getJobState(id)) !== state) {
    if (Date.now() > deadline) throw new Error(`job ${id} is ${await queue.getJobState(id)}, not ${state}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return (await queue.getJob(id))!;
}

/** One report opening one finding on `target` (a finding.opened event for every subscription). */
async function openFinding(svc: TestService, target: string): Promise<void> {
  await json(
    svc.postJson('/checks', report({ check_id: `${target}-1`, target, end_time: '2024-05-01 10:00:00', vulnerabilities: [V] })),
    202,
  );
  await svc.settle();
}

/** The value of one series on the admin listener's /metrics (undefined when absent). */
async function metric(svc: TestService, series: string): Promise<number | undefined> {
  const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The id of the delivery job of `queue` for the webhook `hook`, once there is one. */
async function deliveryIdFor(queue: Queue, hook: string, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'failed', 'completed']);
    const found = jobs.find((j) => j?.name === 'deliver' && j.data.webhookId === hook);
    if (found) return deliveryJobId(found.data.eventId, hook);
    if (Date.now() > deadline) throw new Error(`no delivery for ${hook}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  receiver = await startReceiver();
  receiver.answer = (path) => (path.startsWith('/down') ? 500 : 200);
  strict = await startTestService({
    env: { JWT_SECRET: METRICS_SECRET, WEBHOOK_ALLOW_PRIVATE: 'false' },
    notifications: { delivery: { attempts: 5, backoffMs: 100 } },
  });
  open = await startTestService({ env: { JWT_SECRET: METRICS_SECRET }, notifications: { delivery: { attempts: 2, backoffMs: 100 } } });
}, 120_000);

afterAll(async () => {
  for (const q of queues) await q.close();
  await strict?.close();
  await open?.close();
  await receiver?.close();
}, 60_000);

describe('a subscription to loopback stored while private addresses were allowed', () => {
  it('is refused when delivering: failed after one attempt of five, with its reason, and the receiver gets nothing', async () => {
    const hook = await createSubscription(strict.store, {
      url: `${receiver.url}/strict/s3cr3t-path`,
      secret: '',
      teams: [],
      events: [],
    });
    const queue = queueOf(strict);
    await openFinding(strict, 'strict.example.com');
    const failed = await jobIn(queue, await deliveryIdFor(queue, hook.id), 'failed');
    expect(failed.attemptsMade).toBe(1);
    expect(failed.opts.attempts).toBe(5);
    expect(failed.failedReason).toMatch(/^delivery refused: 127\.0\.0\.1 is not a public address/);
    expect(failed.failedReason).not.toContain('s3cr3t');
    expect(failed.opts.removeOnFail).toEqual({ age: SEVEN_DAYS, count: 10_000 });
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.filter((r) => r.path.startsWith('/strict'))).toEqual([]);
  });
});

describe('deliveries with private addresses allowed', () => {
  const subscribe = async (path: string) =>
    (
      await json(
        fetch(`${open.metricsApiUrl}/api/v1/webhooks`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ url: `${receiver.url}${path}` }),
        }),
        201,
      )
    ).webhook.id as string;

  it('reach a loopback receiver; a failing receiver is retried, then kept as failed for 7 days within the latest 10,000', async () => {
    const ok = await subscribe('/ok');
    const down = await subscribe('/down');
    const queue = queueOf(open);
    await openFinding(open, 'open.example.com');
    await receiver.until((all) => all.some((r) => r.path === '/ok'));
    const delivered = await jobIn(queue, await deliveryIdFor(queue, ok), 'completed');
    expect(delivered.returnvalue).toEqual({ status: 200, bytesRead: 0 });
    const failed = await jobIn(queue, await deliveryIdFor(queue, down), 'failed');
    expect(failed.attemptsMade).toBe(2);
    expect(failed.failedReason).toBe(`delivery to ${receiver.url} failed: the receiver answered 500`);
    expect(failed.opts.removeOnFail).toEqual({ age: SEVEN_DAYS, count: 10_000 });
    expect(receiver.on('/down')).toHaveLength(2);
    // The dispatch jobs that expand events into deliveries are bounded alike.
    expect(dispatchJobOptions.removeOnFail).toEqual({ age: SEVEN_DAYS, count: 10_000 });
  });

  it('are counted on /metrics by outcome, with their latency and the backlog of the notifications queue', async () => {
    // Each service counts its own deliveries (one registry per service): the refusal was strict's.
    const outcome = (service: TestService, o: string) => metric(service, `vulndb_webhook_deliveries_total{outcome="${o}"}`);
    expect(await outcome(open, 'delivered')).toBe(1);
    expect(await outcome(open, 'failed_retryable')).toBe(1);
    expect(await outcome(open, 'failed_final')).toBe(1);
    expect(await outcome(open, 'refused')).toBe(0);
    expect(await outcome(strict, 'refused')).toBe(1);
    expect(await metric(open, 'vulndb_webhook_delivery_duration_seconds_count')).toBe(3);
    expect(await metric(strict, 'vulndb_webhook_delivery_duration_seconds_count')).toBe(1);

    // The backlog is what waits: three deliveries delayed by an hour appear in it.
    const queue = queueOf(open);
    const before = (await metric(open, 'vulndb_webhook_delivery_backlog')) ?? Number.NaN;
    expect(before).toBeGreaterThanOrEqual(0);
    const probes = await Promise.all([1, 2, 3].map((i) => queue.add('backlog-probe', { i }, { delay: 3_600_000 })));
    expect(await metric(open, 'vulndb_webhook_delivery_backlog')).toBe(before + 3);
    for (const p of probes) await p.remove();
    expect(await metric(open, 'vulndb_webhook_delivery_backlog')).toBe(before);
  });
});
