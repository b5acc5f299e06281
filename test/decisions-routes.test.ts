import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionResponse, decisionsResponse } from '../src/decisions/schema.js';
import { epoch } from './support/api.js';
import { METRICS_SECRET, metricsToken } from './support/metrics.js';
import { worked } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * The decision routes of the metrics API (SPEC §12.3): who may decide, what a valid decision is,
 * and the audit trail of replacements and revocations. The API's clock is the test's.
 */

const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';
const ADMIN = metricsToken({ sub: 'root', admin: true });
const MEMBER_A = metricsToken({ sub: 'alice', teams: [TEAM_A] });
const MEMBER_B = metricsToken({ sub: 'bob', teams: [TEAM_B] });
const MEMBER_AB = metricsToken({ sub: 'carol', teams: [TEAM_B, TEAM_A] });

let clock = epoch('2024-02-01T00:00:00Z');
let svc: TestService;
let finding: string;

beforeAll(async () => {
  svc = await startTestService({ now: () => clock, env: { JWT_SECRET: METRICS_SECRET } });
  await json(svc.postJson('/targets', { identifier: 'www.example.com', teams: [TEAM_A] }), 201);
  for (const r of [worked.r1, worked.r2]) await json(svc.postJson('/checks', r), 202);
  await svc.settle();
  finding = (await json(svc.db('/findings'))).findings[0].id;
});
afterAll(() => svc.close());

const call = (method: string, path: string, bearer: string | undefined, body?: unknown) =>
  fetch(`${svc.metricsApiUrl}/api/v1/${path}`, {
    method,
    headers: {
      ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}),
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
const put = (id: string, body: unknown, bearer = ADMIN) => call('PUT', `findings/${id}/decision`, bearer, body);
const del = (id: string, bearer = ADMIN) => call('DELETE', `findings/${id}/decision`, bearer);
const trail = async (id = finding, bearer = ADMIN) =>
  decisionsResponse.parse(await json(call('GET', `findings/${id}/decisions`, bearer))).decisions;

const FALSE_POSITIVE = { decision: 'false_positive', reason: 'The panel is a honeypot.' };
const inDays = (days: number) => new Date((clock + days * 86_400) * 1000).toISOString();
const riskFor = (days: number) => ({ decision: 'accepted_risk', reason: 'Fixed by the next release.', expires_at: inDays(days) });

async function expectError(res: Promise<Response>, code: number, type: string) {
  const r = await res;
  const body = await r.json();
  expect({ status: r.status, body }).toMatchObject({ status: code, body: { code, type } });
  return body as { error: string };
}

describe('who may decide (SPEC §12.3)', () => {
  it('an admin and a member of the target team decide, and each decision records who made it', async () => {
    const byAdmin = decisionResponse.parse(await json(put(finding, FALSE_POSITIVE, ADMIN)));
    expect(byAdmin.decision).toMatchObject({
      finding_id: finding,
      decision: 'false_positive',
      by: 'root',
      expires_at: null,
      revoked_at: null,
    });
    const byMember = decisionResponse.parse(await json(put(finding, riskFor(30), MEMBER_A)));
    expect(byMember.decision).toMatchObject({ by: 'alice', decision: 'accepted_risk', expires_at: inDays(30).replace('.000Z', 'Z') });
    // Belonging to one of the target's teams is enough.
    expect(decisionResponse.parse(await json(put(finding, FALSE_POSITIVE, MEMBER_AB))).decision.by).toBe('carol');
    expect((await trail(finding, MEMBER_A)).map((d) => d.by)).toEqual(['carol', 'alice', 'root']);
  });

  it('a member of another team gets the 404 of an unknown finding, for every route', async () => {
    const unknown = randomUUID();
    for (const id of [finding, unknown, 'not-a-uuid']) {
      await expectError(put(id, FALSE_POSITIVE, MEMBER_B), 404, 'Record not found');
      await expectError(del(id, MEMBER_B), 404, 'Record not found');
      await expectError(call('GET', `findings/${id}/decisions`, MEMBER_B), 404, 'Record not found');
    }
    // Not even an invalid body tells a non-member that the finding exists.
    await expectError(put(finding, { decision: 'maybe' }, MEMBER_B), 404, 'Record not found');
    // Admins too get 404 for what does not exist.
    await expectError(put(unknown, FALSE_POSITIVE, ADMIN), 404, 'Record not found');
    await expectError(call('GET', 'findings/not-a-uuid/decisions', ADMIN), 404, 'Record not found');
  });

  it('without a valid token every route answers 401', async () => {
    await expectError(call('PUT', `findings/${finding}/decision`, undefined, FALSE_POSITIVE), 401, 'Unauthorized');
    await expectError(del(finding, 'not.a.token'), 401, 'Unauthorized');
    await expectError(call('GET', `findings/${finding}/decisions`, undefined), 401, 'Unauthorized');
  });
});

describe('what a valid decision is (SPEC §12.3)', () => {
  const invalid: [string, unknown][] = [
    ['no decision', { reason: 'x' }],
    ['an unknown decision', { decision: 'wont_fix', reason: 'x' }],
    ['no reason', { decision: 'false_positive' }],
    ['an empty reason', { decision: 'false_positive', reason: '' }],
    ['a reason of 2,001 characters', { decision: 'false_positive', reason: 'x'.repeat(2001) }],
    ['an accepted risk without expires_at', { decision: 'accepted_risk', reason: 'x' }],
    ['an expires_at in the past', { ...riskFor(0), expires_at: inDays(-1) }],
    ['an expires_at right now', { ...riskFor(0), expires_at: inDays(0) }],
    ['an accepted risk beyond 365 days', riskFor(366)],
    ['an expires_at that is not RFC 3339', { ...riskFor(0), expires_at: '2024-03-01' }],
    ['an impossible expires_at', { ...riskFor(0), expires_at: '2024-02-30T00:00:00Z' }],
    ['a body that is not an object', ['false_positive']],
    ['a body that is not JSON', '{"decision": '],
  ];
  it.each(invalid)('%s is refused with 422 Validation and nothing is recorded', async (_name, body) => {
    const before = await trail();
    const error = await expectError(put(finding, body), 422, 'Validation');
    expect(error.error).not.toBe('');
    expect(await trail()).toEqual(before);
  });

  it('takes a reason of 2,000 characters (emoji count as one), an accepted risk of 365 days, an expiring false positive', async () => {
    expect((await put(finding, { decision: 'false_positive', reason: '🙂'.repeat(2000) })).status).toBe(200);
    expect((await put(finding, riskFor(365))).status).toBe(200);
    expect((await put(finding, { ...FALSE_POSITIVE, expires_at: inDays(800) })).status).toBe(200);
  });
});

describe('the audit trail (SPEC §12.3)', () => {
  it('records replacements and revocations, newest first, and keeps every decision', async () => {
    const before = (await trail()).length;
    const first = decisionResponse.parse(await json(put(finding, FALSE_POSITIVE, MEMBER_A))).decision;
    clock += 60;
    const second = decisionResponse.parse(await json(put(finding, riskFor(10), MEMBER_AB))).decision;
    clock += 60;
    const revoked = await del(finding, MEMBER_A);
    expect(revoked.status).toBe(204);
    const decisions = await trail();
    expect(decisions).toHaveLength(before + 2);
    expect(decisions[0]).toMatchObject({
      id: second.id,
      revoked_at: new Date(clock * 1000).toISOString().replace('.000Z', 'Z'),
      revoked_by: 'alice',
    });
    expect(decisions[1]).toMatchObject({ id: first.id, revoked_at: second.created_at, revoked_by: 'carol' });
    // Nothing is active any more: revoking again is a 404.
    await expectError(del(finding, MEMBER_A), 404, 'Record not found');
  });

  it('records the fingerprint the finding had when decided', async () => {
    const made = decisionResponse.parse(await json(put(finding, FALSE_POSITIVE))).decision;
    // The worked example's reports carry no fingerprint (SPEC §3.2: "NOT_PROVIDED").
    expect(made.fingerprint).toBe('NOT_PROVIDED');
  });
});
