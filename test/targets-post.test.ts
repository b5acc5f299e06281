import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { targetId } from '../src/domain/ids.js';
import { report, V } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';

describe('POST /targets (SPEC §6.6)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  it('creates a target with its teams and answers 201', async () => {
    const body = await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_A] }), 201);
    expect(body).toEqual({ target: { id: targetId('www.example.com'), identifier: 'www.example.com', teams: [TEAM_A] } });
  });

  it('re-associates: keeps existing teams first, adds new ones in request order, never duplicates', async () => {
    const body = await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_B, TEAM_A, 'testteam', TEAM_B] }), 201);
    expect(body.target.teams).toEqual([TEAM_A, TEAM_B, 'testteam']);
    const again = await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: ['testteam'] }), 201);
    expect(again.target.teams).toEqual([TEAM_A, TEAM_B, 'testteam']);
  });

  it('answers 201 for an existing target without teams, and never removes associations', async () => {
    const body = await json(svc.postJson('/targets', { identifier: 'www.example.com' }), 201);
    expect(body.target.teams).toEqual([TEAM_A, TEAM_B, 'testteam']);
    const nullTeams = await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: null }), 201);
    expect(nullTeams.target.teams).toHaveLength(3);
  });

  it('rejects a void identifier or team with 422, the identifier message winning', async () => {
    expect(await json(svc.postJson('/targets', { teams: [TEAM_A] }), 422)).toEqual({ message: 'identifier can not be void' });
    expect(await json(svc.postJson('/targets', { identifier: '', teams: [TEAM_A] }), 422)).toEqual({
      message: 'identifier can not be void',
    });
    expect(await json(svc.postJson('/targets', { identifier: 'x.example.com', teams: [''] }), 422)).toEqual({
      message: 'team can not be void',
    });
    expect(await json(svc.postJson('/targets', { identifier: '', teams: [''] }), 422)).toEqual({ message: 'identifier can not be void' });
  });

  it('rejects wrong types and invalid JSON with 400 before any emptiness rule', async () => {
    expect((await json(svc.postJson('/targets', { identifier: '', teams: 'team' }), 400)).message).toContain('teams');
    expect((await json(svc.postJson('/targets', { identifier: 5 }), 400)).message).toContain('identifier');
    expect((await json(svc.postJson('/targets', [1, 2]), 400)).message).toContain('JSON object');
    const res = await svc.db('/targets', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"identifier":' });
    expect(res.status).toBe(400);
  });

  it('counts targets created by POST /targets and shares them with ingestion', async () => {
    await json(svc.postJson('/targets', { identifier: 'new.example.com', teams: [TEAM_B] }), 201);
    await json(
      svc.postJson(
        '/checks',
        report({ check_id: 'n-1', target: 'new.example.com', end_time: '2024-01-01 10:00:00', vulnerabilities: [V] }),
      ),
      202,
    );
    await svc.settle();
    const { size } = await json(svc.db('/stats/size'));
    expect(size.targets).toBe(2); // www.example.com and new.example.com, the latter created once
    const reassociated = await json(svc.postJson('/targets', { identifier: 'new.example.com', teams: [TEAM_A] }), 201);
    expect(reassociated.target).toEqual({ id: targetId('new.example.com'), identifier: 'new.example.com', teams: [TEAM_B, TEAM_A] });
  });
});

describe('HTTP behaviour common to every route', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ worker: false });
  });
  afterAll(() => svc.close());

  it('answers the healthcheck while the store answers', async () => {
    expect(await json(svc.db('/healthcheck'))).toEqual({ status: 'OK' });
  });

  it('ignores a trailing slash', async () => {
    expect(await json(svc.db('/stats/size/'))).toEqual({ size: { sources: 0, targets: 0, issues: 0, findings: 0, finding_events: 0 } });
  });

  it('answers 404 for unknown routes and 405 for other methods on known ones', async () => {
    expect(await json(svc.db('/nothing/here'), 404)).toEqual({ message: 'Not Found' });
    expect(await json(svc.db('/stats/size', { method: 'DELETE' }), 405)).toEqual({ message: 'Method Not Allowed' });
    expect(await json(svc.db('/checks'), 405)).toEqual({ message: 'Method Not Allowed' });
  });

  it('serves the metrics API healthcheck without a token', async () => {
    expect(await json(fetch(`${svc.metricsApiUrl}/api/v1/healthcheck`))).toEqual({ status: 'OK' });
  });
});
