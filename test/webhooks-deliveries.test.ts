import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryJobId, NOTIFICATIONS_QUEUE } from '../src/queue/contract.js';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { report, type VulnSpec } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import { hmac, startReceiver, type Receiver, type Received } from './support/webhook-receiver.js';

/**
 * Webhooks end to end (SPEC §9.1): a real service (engine, Redis, ingest and notifications
 * workers) delivering to a receiver on loopback while reports go through POST /checks.
 */

const TEAM_A = randomUUID();
const TEAM_B = randomUUID();
const SECRET = 'receiver-secret-1';
const v1 = { summary: 'Webhook issue one', score: 7.5, details: 'one' };
const v2 = { summary: 'Webhook issue two', score: 4.0, details: 'two' };
const scan = (checkId: string, target: string, endTime: string, vulnerabilities: VulnSpec[]) =>
  report({ check_id: checkId, target, end_time: endTime, vulnerabilities });

let svc: TestService;
let receiver: Receiver;
let queue: Queue;
const hooks: Record<string, string> = {};

async function subscribe(path: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${svc.metricsApiUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}${path}`, ...body }),
  });
  return (await json(res, 201)).webhook.id;
}

const distinctIds = (rs: Received[]) => [...new Set(rs.map((r) => r.body.id))];
const ofType = (rs: Received[], type: string) => rs.filter((r) => r.body.type === type);

async function post(...reports: object[]) {
  for (const r of reports) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
}

beforeAll(async () => {
  receiver = await startReceiver();
  // The flaky receiver fails its first two requests.
  receiver.answer = (path, nth) => (path === '/flaky' && nth <= 2 ? 500 : 200);
  svc = await startTestService({ env: { JWT_SECRET: METRICS_SECRET }, notifications: { delivery: { backoffMs: 200 } } });
  queue = new Queue(NOTIFICATIONS_QUEUE, { connection: svc.redis, prefix: svc.names.queuePrefix });
  await json(svc.postJson('/targets', { identifier: 'a.example.com', teams: [TEAM_A] }), 201);
  await json(svc.postJson('/targets', { identifier: 'b.example.com', teams: [TEAM_B] }), 201);
  hooks.all = await subscribe('/all', { secret: SECRET });
  hooks.teamA = await subscribe('/team-a', { teams: [TEAM_A] });
  hooks.flaky = await subscribe('/flaky', { events: ['finding.reopened'] });
}, 60_000);

afterAll(async () => {
  await queue?.close();
  await svc?.close();
  await receiver?.close();
});

describe('webhook deliveries', () => {
  it('one report opening two findings delivers two signed finding.opened events carrying the finding objects', async () => {
    await post(scan('wh-a1', 'a.example.com', '2024-03-01 10:00:00', [v1, v2]));
    await receiver.until((all) => all.filter((r) => r.path === '/all').length >= 2);
    const all = receiver.on('/all');
    expect(all.map((r) => r.body.type)).toEqual(['finding.opened', 'finding.opened']);
    expect(distinctIds(all)).toHaveLength(2);
    const listed = await json(svc.db('/findings?identifiers=a.example.com'));
    expect(listed.findings).toHaveLength(2);
    for (const r of all) {
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-vulndb-signature']).toBe(hmac(SECRET, r.raw));
      expect(r.headers['x-vulndb-event']).toBe(r.body.type);
      expect(r.headers['x-vulndb-delivery']).toBe(r.body.id);
      expect(Date.parse(r.body.time)).toBeGreaterThan(Date.now() - 60_000);
      // The finding object of the database API (exposures run to "now", so they are left out).
      const { finding } = await json(svc.db(`/findings/${r.body.finding.id}`));
      const { total_exposure: _t, current_exposure: _c, ...stable } = finding;
      expect(r.body.finding).toMatchObject(stable);
      expect(r.body.finding.status).toBe('OPEN');
      expect(r.body.finding.target).toMatchObject({ identifier: 'a.example.com', teams: [TEAM_A] });
    }
    // The team's subscription gets them too, unsigned (no secret).
    await receiver.until((rs) => rs.filter((r) => r.path === '/team-a').length >= 2);
    expect(receiver.on('/team-a').every((r) => r.headers['x-vulndb-signature'] === undefined)).toBe(true);
  }, 60_000);

  it('a later scan without one of them delivers finding.fixed for it alone; a scan finding it again, finding.reopened', async () => {
    const two = receiver.on('/all').find((r) => r.body.finding.details === 'two')!.body.finding.id;
    await post(scan('wh-a2', 'a.example.com', '2024-03-02 10:00:00', [v1]));
    await receiver.until((all) => ofType(all, 'finding.fixed').some((r) => r.path === '/all'));
    const fixed = ofType(receiver.on('/all'), 'finding.fixed');
    expect(fixed.map((r) => [r.body.finding.id, r.body.finding.status])).toEqual([[two, 'FIXED']]);

    await post(scan('wh-a3', 'a.example.com', '2024-03-03 10:00:00', [v1, v2]));
    await receiver.until((all) => ofType(all, 'finding.reopened').some((r) => r.path === '/all'));
    const reopened = ofType(receiver.on('/all'), 'finding.reopened');
    expect(reopened.map((r) => [r.body.finding.id, r.body.finding.status])).toEqual([[two, 'OPEN']]);
    // v1 stayed OPEN through both scans: nothing for it.
    expect(receiver.on('/all')).toHaveLength(4);
  }, 60_000);

  it('a receiver answering 500 twice and then 200 gets the same event, same id and same bytes, three times', async () => {
    await receiver.until((all) => all.filter((r) => r.path === '/flaky').length >= 3, 30_000, 'the flaky retries');
    const flaky = receiver.on('/flaky');
    expect(flaky).toHaveLength(3);
    expect(new Set(flaky.map((r) => r.headers['x-vulndb-delivery'])).size).toBe(1);
    expect(new Set(flaky.map((r) => r.raw)).size).toBe(1);
    expect(flaky[0]!.body.type).toBe('finding.reopened');
    // The receiver has answered; the job completes right after.
    const id = deliveryJobId(flaky[0]!.body.id, hooks.flaky!);
    const deadline = Date.now() + 10_000;
    while ((await queue.getJobState(id)) !== 'completed' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    const job = await queue.getJob(id);
    expect(await job?.getState()).toBe('completed');
    expect(job?.attemptsMade).toBe(3);
  }, 60_000);

  it("a team's subscription receives only its teams' events", async () => {
    await post(scan('wh-b1', 'b.example.com', '2024-03-01 10:00:00', [v1]));
    await receiver.until((all) => all.some((r) => r.path === '/all' && r.body.finding.target.identifier === 'b.example.com'));
    const event = receiver.on('/all').find((r) => r.body.finding.target.identifier === 'b.example.com')!.body;
    // The dispatcher adds every delivery of an event at once: the team's was never made.
    expect(await queue.getJob(deliveryJobId(event.id, hooks.all!))).toBeDefined();
    expect(await queue.getJob(deliveryJobId(event.id, hooks.teamA!))).toBeUndefined();
    expect(receiver.on('/team-a').map((r) => r.body.finding.target.identifier)).not.toContain('b.example.com');
    expect(receiver.on('/team-a').length).toBe(4);
  }, 60_000);

  it('the same reports delivered again (a retry) emit no new event id', async () => {
    const before = receiver.on('/all').length;
    await post(
      scan('wh-a1', 'a.example.com', '2024-03-01 10:00:00', [v1, v2]),
      scan('wh-a3', 'a.example.com', '2024-03-03 10:00:00', [v1, v2]),
      scan('wh-b1', 'b.example.com', '2024-03-01 10:00:00', [v1]),
    );
    // Long enough for a delivery to arrive (they take milliseconds here).
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.on('/all')).toHaveLength(before);
    expect(distinctIds(receiver.on('/all'))).toHaveLength(before);
  }, 60_000);
});
