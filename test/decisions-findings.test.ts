import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findingListResponse, findingResponse } from '../src/findings/schema.js';
import { epoch, get } from './support/api.js';
import { METRICS_SECRET, metricsToken, putDecision } from './support/metrics.js';
import { report, worked } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * The `decision` field and the `decision=` filter of findings lists (SPEC §12.3), on both page
 * plans (a team's list in id order, any list by score), at now and at an atDate.
 *
 *   F1 www.example.com   medium 6.5  no decision
 *   F2 api.example.com   high 7.5    accepted risk from 2024-02-01 until 2024-03-01
 */

const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const ADMIN = metricsToken({ sub: 'root', admin: true });

const clock = epoch('2024-02-01T00:00:00Z');
let svc: TestService;
let f1: string;
let f2: string;

beforeAll(async () => {
  svc = await startTestService({ now: () => clock, env: { JWT_SECRET: METRICS_SECRET } });
  for (const identifier of ['www.example.com', 'api.example.com']) {
    await json(svc.postJson('/targets', { identifier, teams: [TEAM_A] }), 201);
  }
  const api = report({
    check_id: 'api-0001',
    target: 'api.example.com',
    end_time: '2024-01-10 10:00:00',
    vulnerabilities: [{ summary: 'Verbose errors', description: 'Stack traces in answers.', score: 7.5 }],
  });
  for (const r of [worked.r1, worked.r2, api]) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
  const findings = (await json(svc.db('/findings'))).findings as { id: string; score: number; decision: unknown }[];
  expect(findings.map((f) => f.decision)).toEqual([null, null]);
  [f1, f2] = [findings.find((f) => f.score === 6.5)!.id, findings.find((f) => f.score === 7.5)!.id];
  await json(
    putDecision(
      svc.metricsApiUrl!,
      f2,
      { decision: 'accepted_risk', reason: 'Behind the VPN.', expires_at: '2024-03-01T00:00:00Z' },
      ADMIN,
    ),
  );
});
afterAll(() => svc.close());

const list = async (query: string) => (await get(svc, `/findings?${query}`, findingListResponse)).findings;
const ids = async (query: string) => (await list(query)).map((f) => f.id);

describe('findings lists and decisions (SPEC §12.3)', () => {
  it('show the decision active now on each finding, and on a single finding', async () => {
    const findings = await list('');
    expect(findings.find((f) => f.id === f1)!.decision).toBeNull();
    expect(findings.find((f) => f.id === f2)!.decision).toMatchObject({
      finding_id: f2,
      decision: 'accepted_risk',
      by: 'root',
      created_at: '2024-02-01T00:00:00Z',
      expires_at: '2024-03-01T00:00:00Z',
      revoked_at: null,
    });
    expect((await get(svc, `/findings/${f2}`, findingResponse)).finding.decision?.decision).toBe('accepted_risk');
  });

  it('select findings by their decision, on both page plans', async () => {
    for (const plan of [`team=${TEAM_A}`, 'sortBy=-score']) {
      expect(await ids(`${plan}&decision=any`)).toEqual([f2]);
      expect(await ids(`${plan}&decision=accepted_risk`)).toEqual([f2]);
      expect(await ids(`${plan}&decision=false_positive`)).toEqual([]);
      expect(await ids(`${plan}&decision=none`)).toEqual([f1]);
    }
    const page = await get(svc, '/findings?decision=none&status=OPEN', findingListResponse);
    expect(page.pagination).toMatchObject({ total: 1, more: false });
  });

  it('judge decisions at atDate', async () => {
    expect(await ids('atDate=2024-01-20&decision=any')).toEqual([]);
    expect((await list('atDate=2024-01-20')).every((f) => f.decision === null)).toBe(true);
    expect(await ids('atDate=2024-02-15&decision=any')).toEqual([f2]);
    // Expired by then.
    expect(await ids('atDate=2024-03-02&decision=none')).toContain(f2);
  });

  it('refuse an unknown decision filter', async () => {
    expect(await json(svc.db('/findings?decision=maybe'), 400)).toEqual({ message: 'Invalid Decision' });
    expect(await json(svc.db(`/targets/${f1}/findings?decision=ANY`), 400)).toEqual({ message: 'Invalid Decision' });
  });
});
