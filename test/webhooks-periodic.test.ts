import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, METRICS_SECRET } from './support/metrics.js';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

/**
 * The periodic check (SPEC §9.1): SLA breaches (§12.1) and decision expiries (§12.3) are emitted
 * once, in the round whose window (last run, now] holds their instant. The check's clock is the
 * test's, moved by hand; rounds run every 100 ms.
 */

const epoch = (iso: string) => Date.parse(iso) / 1000;
const FOUND = '2024-01-01T10:00:00Z';
// V scores 6.5: medium, 90 days under the default SLA_DAYS.
const DEADLINE = epoch(FOUND) + 90 * 86_400;
const sqlTime = (s: number) => new Date(s * 1000).toISOString().slice(0, 19).replace('T', ' ');

let svc: TestService;
let receiver: Receiver;
let clock = DEADLINE - 600;
let findingId: string;
let targetId: string;

/** Moves the check's clock and waits for two rounds to have passed. */
async function moveClock(to: number) {
  clock = to;
  await new Promise((r) => setTimeout(r, 400));
}

beforeAll(async () => {
  receiver = await startReceiver();
  svc = await startTestService({
    env: { JWT_SECRET: METRICS_SECRET },
    notifications: { checkIntervalMs: 100, now: () => clock },
  });
  const res = await fetch(`${svc.metricsApiUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}/clock`, events: ['finding.sla_breached', 'finding.decision'] }),
  });
  await json(res, 201);
  await json(svc.postJson('/checks', report({ check_id: 'sla-1', end_time: '2024-01-01 10:00:00', vulnerabilities: [V] })), 202);
  await svc.settle();
  const { findings } = await json(svc.db('/findings'));
  findingId = findings[0].id;
  targetId = findings[0].target.id;
}, 60_000);

afterAll(async () => {
  await svc?.close();
  await receiver?.close();
});

describe('the periodic check', () => {
  it('emits finding.sla_breached once, in the round whose window holds the deadline', async () => {
    await moveClock(DEADLINE - 60);
    expect(receiver.on('/clock')).toHaveLength(0);
    await moveClock(DEADLINE + 60);
    await receiver.until((all) => all.length >= 1, 10_000, 'the breach');
    await moveClock(DEADLINE + 3600);
    const got = receiver.on('/clock');
    expect(got).toHaveLength(1);
    expect(got[0]!.body).toMatchObject({ type: 'finding.sla_breached', finding: { id: findingId, status: 'OPEN' } });
  });

  it('emits finding.decision for a decision that expires, not for one revoked before its expiry', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expiring = randomUUID();
    const revoked = randomUUID();
    const row = (id: string, expires: number) => ({
      id,
      finding_id: findingId,
      target_id: targetId,
      decision: 'accepted_risk',
      reason: 'known, planned',
      by: 'tester',
      created_at: `${sqlTime(now - 60)}.000`,
      expires_at: sqlTime(expires),
      fingerprint: '',
    });
    await svc.store.insert('finding_decisions', [row(expiring, now + 100), row(revoked, now + 100)]);
    await svc.store.insert('finding_decision_revocations', [
      { decision_id: revoked, finding_id: findingId, revoked_at: `${sqlTime(now - 30)}.000`, revoked_by: 'tester' },
    ]);
    await moveClock(now + 50);
    expect(receiver.on('/clock')).toHaveLength(1);
    await moveClock(now + 150);
    await receiver.until((all) => all.length >= 2, 10_000, 'the expiry');
    await moveClock(now + 300);
    const decisions = receiver.on('/clock').filter((r) => r.body.type === 'finding.decision');
    expect(decisions).toHaveLength(1);
    expect(decisions[0]!.body).toMatchObject({
      finding: { id: findingId },
      decision: { id: expiring, finding_id: findingId, decision: 'accepted_risk', action: 'expired', revoked_at: null },
    });
  });
});
