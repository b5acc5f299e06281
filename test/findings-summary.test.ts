import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { targetId } from '../src/domain/ids.js';
import { ingest } from './support/api.js';
import { json, startTestService, type TestService } from './support/service.js';
import { SLA_REPORTS, SLA_TARGETS, TEAM_X } from './support/sla-history.js';

/**
 * `summary=` on findings lists (beyond SPEC §5.5, for the triage page's issue search): the finding's
 * issue summary contains the text, whatever the case. On test/support/sla-history.ts: eight
 * findings, one per target, of the issues "SLA critical" (s1, s2), "SLA high" (s3, s8),
 * "SLA medium" (s4), "SLA low" (s5) and "SLA informational" (s6, s7).
 */

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
  for (const [identifier, teams] of Object.entries(SLA_TARGETS)) {
    if (teams.length > 0) await json(svc.postJson('/targets', { identifier, teams }), 201);
  }
  await ingest(svc, SLA_REPORTS);
}, 60_000);
afterAll(() => svc?.close());

const list = async (path: string) => {
  const body = await json(svc.db(path));
  return {
    total: body.pagination.total as number,
    targets: (body.findings as { target: { identifier: string } }[]).map((f) => f.target.identifier.slice(0, 2)).sort(),
  };
};

describe('findings lists: summary=', () => {
  it('selects the findings whose issue summary contains the text, ignoring case', async () => {
    expect(await list('/findings?summary=CRITICAL')).toEqual({ total: 2, targets: ['s1', 's2'] });
    expect(await list('/findings?summary=sla%20h')).toEqual({ total: 2, targets: ['s3', 's8'] });
    expect(await list('/findings?summary=nothing%20like%20it')).toEqual({ total: 0, targets: [] });
    // Empty is absent; every finding's summary contains "SLA".
    expect((await list('/findings?summary=')).total).toBe(8);
    expect((await list('/findings?summary=sla')).total).toBe(8);
  });

  it('combines with the other filters, pages and sub-lists', async () => {
    expect(await list(`/findings?summary=high&team=${TEAM_X}`)).toEqual({ total: 1, targets: ['s3'] });
    expect(await list('/findings?summary=informational&status=OPEN')).toEqual({ total: 1, targets: ['s7'] });
    expect(await list('/findings?summary=sla%20&size=3&page=2&sortBy=-score')).toMatchObject({ total: 8, targets: expect.any(Array) });
    expect((await list('/findings?summary=sla%20&size=3&page=3')).targets).toHaveLength(2);
    const s4 = targetId('s4.sla.example.com');
    expect(await list(`/targets/${s4}/findings?summary=Medium`)).toEqual({ total: 1, targets: ['s4'] });
    expect(await list(`/targets/${s4}/findings?summary=critical`)).toEqual({ total: 0, targets: [] });
  });
});
