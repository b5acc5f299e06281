import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueReports } from '../src/queue/producer.js';
import { NOTIFICATIONS_QUEUE } from '../src/queue/contract.js';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { report, V } from './support/reports.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

/**
 * A receiver that never answers (SPEC §9.1): ingestion goes on at its pace, each delivery is cut
 * at the timeout and retried with the same event id, and deliveries out of attempts are kept as
 * failed, listed by `vulndb jobs failed --queue notifications`. The timeout and backoff are
 * shortened for the test (10 s and 30 s in service).
 */

const run = promisify(execFile);
const bin = path.resolve('bin/vulndb.mjs');
const REPORTS = 100;

let svc: TestService;
let receiver: Receiver;
let notifications: Queue;

/** Reports each opening a finding on a target of their own; resolves with reports/s through the worker. */
async function ingestRate(label: string): Promise<number> {
  const reports = Array.from({ length: REPORTS }, (_, i) =>
    report({ check_id: `${label}-${i}`, target: `t${i}.${label}.example.com`, end_time: '2024-05-01 10:00:00', vulnerabilities: [V] }),
  );
  const started = performance.now();
  await enqueueReports(svc.queue!, reports);
  await svc.settle(120_000);
  return REPORTS / ((performance.now() - started) / 1000);
}

beforeAll(async () => {
  receiver = await startReceiver();
  receiver.answer = () => 'hang';
  svc = await startTestService({
    env: { JWT_SECRET: METRICS_SECRET },
    notifications: { timeoutMs: 1000, delivery: { attempts: 2, backoffMs: 200 } },
  });
  notifications = new Queue(NOTIFICATIONS_QUEUE, { connection: svc.redis, prefix: svc.names.queuePrefix });
}, 60_000);

afterAll(async () => {
  await notifications?.close();
  await receiver?.close();
  await svc?.close();
}, 60_000);

describe('a receiver that hangs', () => {
  const hookIds: string[] = [];

  it('does not slow ingestion: reports/s with every event sent to it stay above half of the rate without it', async () => {
    const subscribe = async () => {
      const res = await fetch(`${svc.metricsApiUrl}/api/v1/webhooks`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: `${receiver.url}/hang` }),
      });
      return (await json(res, 201)).webhook.id as string;
    };
    const unsubscribe = (id: string) =>
      fetch(`${svc.metricsApiUrl}/api/v1/webhooks/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    // Warm-up (first statements, JIT); then rounds without and with the receiver, interleaved, the
    // best of each kept: the host is shared, and a busy moment should not decide the comparison.
    await ingestRate('warm');
    const without: number[] = [];
    const withHanging: number[] = [];
    for (let round = 0; round < 3; round++) {
      without.push(await ingestRate(`plain${round}`));
      const id = await subscribe();
      hookIds.push(id);
      withHanging.push(await ingestRate(`hanging${round}`));
      if (round < 2) expect((await unsubscribe(id)).status).toBe(204);
    }
    // Its deliveries were dispatched (they hang from here on).
    await receiver.until((all) => all.some((r) => r.path === '/hang'), 30_000, 'a delivery to the hanging receiver');
    const [best, bestWith] = [Math.max(...without), Math.max(...withHanging)];
    const rates = `reports/s without the receiver ${without.map((r) => r.toFixed(1))}, with it ${withHanging.map((r) => r.toFixed(1))}`;
    expect(bestWith, rates).toBeGreaterThan(best / 2);
  }, 300_000);

  it('gets each event again, same id, after the timeout', async () => {
    await receiver.until(
      (all) => {
        const ids = all.map((r) => r.headers['x-vulndb-delivery']);
        return ids.some((id, i) => ids.indexOf(id) !== i);
      },
      30_000,
      'a second attempt',
    );
    // A delivery of the last subscription (the earlier ones were deleted: their retries are dropped).
    const hang = receiver.on('/hang');
    const first = hang.find((r) => hang.filter((o) => o.headers['x-vulndb-delivery'] === r.headers['x-vulndb-delivery']).length > 1)!;
    const again = hang.filter((r) => r.headers['x-vulndb-delivery'] === first.headers['x-vulndb-delivery']);
    expect(again.length).toBe(2);
    expect(again[1]!.raw).toBe(first.raw);
    expect(again[1]!.at - first.at).toBeGreaterThanOrEqual(1000);
  }, 60_000);

  it('keeps deliveries out of attempts as failed, listed by vulndb jobs failed --queue notifications', async () => {
    const deadline = Date.now() + 60_000;
    while ((await notifications.getFailedCount()) === 0) {
      if (Date.now() > deadline) throw new Error('no failed delivery');
      await new Promise((r) => setTimeout(r, 100));
    }
    const listed = await run(
      process.execPath,
      [bin, 'jobs', 'failed', '--queue', 'notifications', '--json', '--limit', '5', '--queue-prefix', svc.names.queuePrefix],
      { env: { ...process.env, REDIS_URL, LOG_LEVEL: 'error' } },
    );
    const out = JSON.parse(listed.stdout);
    expect(out.failed.notifications).toBeGreaterThan(0);
    expect(out.jobs[0]).toMatchObject({
      queue: 'notifications',
      webhook: expect.toBeOneOf(hookIds),
      event: expect.stringMatching(/^finding\.opened [0-9a-f-]{36}$/),
      reason: expect.stringContaining('no answer within 1000 ms'),
      attempts_made: 2,
    });
    expect(out.jobs[0].id).toBe(`${out.jobs[0].event.split(' ')[1]}_${out.jobs[0].webhook}`);
  }, 90_000);
});
