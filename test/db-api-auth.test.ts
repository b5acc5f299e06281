import { createSecretKey, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDbApiWarning } from '../src/auth/db-api.js';
import { targetId } from '../src/domain/ids.js';
import { signJwt } from '../src/metrics/sign.js';
import { reportTime } from './support/api.js';
import { report, type VulnSpec } from './support/reports.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * SPEC §5.1 with DB_API_AUTH=jwt: the database API takes the metrics API's bearer tokens, a caller
 * who is not an admin sees only its teams' targets and what hangs off them, and writes need admin
 * or the `ingest` scope.
 */

const SECRET = 'db-api-auth-test-secret-0123456789abcdef';
const hsKey = createSecretKey(Buffer.from(SECRET));
const TEAM_A = 'a1000000-0000-4000-8000-00000000000a';
const TEAM_B = 'b2000000-0000-4000-8000-00000000000b';
const TEAM_C = 'c3000000-0000-4000-8000-00000000000c';

const nowS = () => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown>) => ({ sub: 'tester', iat: nowS(), exp: nowS() + 600, ...extra });
const token = (extra: Record<string, unknown>, key: KeyObject = hsKey) => signJwt(claims(extra), key, 'HS256');
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

const ADMIN = token({ admin: true });
const ALICE = token({ teams: [TEAM_A] });
const BOB = token({ teams: [TEAM_B] });
const BOTH = token({ teams: [TEAM_A, TEAM_B] });
const NOBODY = token({});
const INGESTER = token({ scopes: ['ingest'] });

// Targets and their teams; orphan.example.com has none.
const TARGETS = {
  a1: { identifier: 'a1.example.com', teams: [TEAM_A] },
  a2: { identifier: 'a2.example.com', teams: [TEAM_A] },
  b1: { identifier: 'b1.example.com', teams: [TEAM_B] },
  ab: { identifier: 'ab.example.com', teams: [TEAM_A, TEAM_B] },
  orphan: { identifier: 'orphan.example.com', teams: [] },
};
const id = (t: keyof typeof TARGETS) => targetId(TARGETS[t].identifier);

const SHARED = (score: number): VulnSpec => ({ summary: 'Shared issue', description: 'On both teams.', score });
const ONLY_A = (score: number): VulnSpec => ({ summary: 'Issue of A', description: 'Only on team A.', score });
const ONLY_B = (score: number): VulnSpec => ({ summary: 'Issue of B', description: 'Only on team B.', score });

const DAY = 86_400;
const T0 = Date.parse('2024-03-01T00:00:00Z') / 1000;
const scan = (t: keyof typeof TARGETS, day: number, vulnerabilities: VulnSpec[]) =>
  report({ check_id: `${t}-${day}`, target: TARGETS[t].identifier, end_time: reportTime(T0 + day * DAY), vulnerabilities });

/**
 * a1: Shared (7) open, A-only (4) fixed after 48 h; a2: A-only (9) open; b1: Shared (5) fixed after
 * 24 h, B-only (8) open; ab: Shared (3) open; orphan: B-only (6) open.
 */
const REPORTS = [
  scan('a1', 0, [SHARED(7), ONLY_A(4)]),
  scan('a1', 2, [SHARED(7)]),
  scan('a2', 0, [ONLY_A(9)]),
  scan('b1', 0, [SHARED(5), ONLY_B(8)]),
  scan('b1', 1, [ONLY_B(8)]),
  scan('ab', 0, [SHARED(3)]),
  scan('orphan', 0, [ONLY_B(6)]),
];

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

describe('database API with DB_API_AUTH=jwt', () => {
  let svc: TestService;
  const call = async (path: string, bearer?: string, init: RequestInit = {}): Promise<Answer> => {
    const headers: Record<string, string> = { ...(init.body ? { 'Content-Type': 'application/json' } : {}) };
    if (bearer !== undefined) headers.Authorization = bearer.includes(' ') ? bearer : `Bearer ${bearer}`;
    const res = await fetch(`${svc.dbApiUrl}${path}`, { ...init, headers });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
  };
  const get = async (path: string, bearer: string, status = 200) => {
    const res = await call(path, bearer);
    expect({ path, status: res.status, body: res.body }).toMatchObject({ status });
    return res.body;
  };
  const post = (path: string, bearer: string | undefined, body: unknown) =>
    call(path, bearer, { method: 'POST', body: JSON.stringify(body) });

  /** Ids of the findings of the targets `of`, as the admin lists them. */
  let findingsOf: (...of: (keyof typeof TARGETS)[]) => string[];
  let all: any[];
  let issues: Record<'shared' | 'onlyA' | 'onlyB', string>;
  let sources: any[];

  beforeAll(async () => {
    svc = await startTestService({ env: { DB_API_AUTH: 'jwt', JWT_SECRET: SECRET } });
    for (const t of Object.values(TARGETS)) expect((await post('/targets', ADMIN, t)).status).toBe(201);
    for (const r of REPORTS) expect((await post('/checks', ADMIN, r)).status).toBe(202);
    await svc.settle();
    all = (await get('/findings?size=100', ADMIN)).findings;
    expect(all).toHaveLength(7);
    findingsOf = (...of) => all.filter((f) => of.some((t) => f.target.id === id(t))).map((f) => f.id);
    const bySummary = new Map<string, string>((await get('/issues', ADMIN)).issues.map((i: any) => [i.summary, i.id]));
    issues = { shared: bySummary.get('Shared issue')!, onlyA: bySummary.get('Issue of A')!, onlyB: bySummary.get('Issue of B')! };
    sources = (await get('/sources?size=100', ADMIN)).sources;
    expect(sources.length).toBeGreaterThanOrEqual(REPORTS.length);
  }, 60_000);
  afterAll(() => svc?.close());

  const sourceOf = (t: keyof typeof TARGETS) => sources.find((s) => s.target_id === id(t)).id as string;
  const findingOf = (t: keyof typeof TARGETS, issue: keyof typeof issues) =>
    all.find((f) => f.target.id === id(t) && f.issue.id === issues[issue]).id as string;
  const ids = (rows: { id: string }[]) => rows.map((r) => r.id).sort();

  describe('authentication (the metrics API tokens, SPEC §8.1)', () => {
    const rejected: [string, () => string | undefined][] = [
      ['no Authorization header', () => undefined],
      ['a Basic scheme', () => 'Basic YWxpY2U6c2VjcmV0'],
      ['a malformed token', () => 'not.a-jwt'],
      ['a wrong signature', () => token({ admin: true }, createSecretKey(Buffer.from('another-secret-another-secret-another')))],
      ['alg none', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims({ admin: true }))}.`],
      ['an expired token', () => token({ admin: true, exp: nowS() - 120 })],
      ['a token not valid yet', () => token({ admin: true, nbf: nowS() + 120 })],
      ['no sub', () => token({ admin: true, sub: undefined })],
      ['teams as a string', () => token({ teams: TEAM_A })],
      ['scopes as a string', () => token({ scopes: 'ingest' })],
    ];
    for (const [name, bearer] of rejected) {
      it(`given ${name}, when findings are requested, then it answers 401 Unauthorized with WWW-Authenticate: Bearer`, async () => {
        const res = await call('/findings', bearer());
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expect(res.body).toEqual({ message: 'Unauthorized' });
      });
    }

    it('given no token, when any other route (even an unknown one or a write) is requested, then it answers 401', async () => {
      for (const path of ['/issues', `/targets/${id('a1')}`, '/stats/open', '/stats/size', '/no/such/route']) {
        expect({ path, status: (await call(path)).status }).toEqual({ path, status: 401 });
      }
      expect((await post('/checks', undefined, REPORTS[0])).status).toBe(401);
      expect((await post('/targets', undefined, TARGETS.a1)).status).toBe(401);
    });

    it('given no token, when /healthcheck (with or without a trailing slash) is requested, then it answers 200', async () => {
      expect(await call('/healthcheck')).toMatchObject({ status: 200, body: { status: 'OK' } });
      expect((await call('/healthcheck/')).status).toBe(200);
    });

    it('given no token, when the OpenAPI document is requested, then it is served and describes the optional bearer scheme', async () => {
      const doc = (await call('/openapi.json')).body;
      expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(doc.security).toEqual([{}, { bearer: [] }]);
      expect(doc.paths['/healthcheck'].get.security).toEqual([]);
      expect(doc.paths['/findings'].get.responses).toHaveProperty('401');
      expect(doc.paths['/findings'].get.responses).toHaveProperty('403');
      expect(doc.paths['/checks'].post.responses).toHaveProperty('403');
    });

    it('given an admin token, when findings are requested, then every finding is listed', async () => {
      const body = await get('/findings?size=100', ADMIN);
      expect(body.pagination.total).toBe(7);
    });

    it('given a member of team A, when it filters by team B (alone or with A), then it answers 403 Forbidden', async () => {
      for (const path of [
        `/findings?team=${TEAM_B}`,
        `/findings?teams=${TEAM_A},${TEAM_B}`,
        `/issues/${issues.shared}/findings?team=${TEAM_B}`,
        `/targets?teams=${TEAM_B}`,
        `/stats/open?team=${TEAM_B}`,
        `/stats/mttr?teams=${TEAM_C}`,
        `/stats/assets?team=${TEAM_B}`,
        `/stats/exposure?team=${TEAM_B}`,
      ]) {
        const res = await call(path, ALICE);
        expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 403, body: { message: 'Forbidden' } });
      }
      expect((await call(`/findings?team=${TEAM_A}`, ALICE)).status).toBe(200);
    });
  });

  describe('lists and sub-lists show only the scope', () => {
    it('given a member of team A, when it lists findings, then it gets exactly what an admin gets with team=A', async () => {
      const mine = await get('/findings?size=100', ALICE);
      expect(ids(mine.findings)).toEqual(findingsOf('a1', 'a2', 'ab').sort());
      expect(mine).toEqual(await get(`/findings?size=100&team=${TEAM_A}`, ADMIN));
    });

    it('given a member of both teams, when it lists findings, then each finding of either team appears once', async () => {
      const mine = await get('/findings?size=100', BOTH);
      expect(ids(mine.findings)).toEqual(findingsOf('a1', 'a2', 'b1', 'ab').sort());
      expect(mine.pagination.total).toBe(6);
    });

    it('given a member of team A, when it lists issues, targets and sources, then only those of its targets appear', async () => {
      expect(ids((await get('/issues', ALICE)).issues)).toEqual([issues.shared, issues.onlyA].sort());
      expect(ids((await get('/targets', ALICE)).targets)).toEqual([id('a1'), id('a2'), id('ab')].sort());
      const mine = (await get('/sources?size=100', ALICE)).sources;
      const expected = sources.filter((s) => [id('a1'), id('a2'), id('ab')].includes(s.target_id));
      expect(mine).toEqual(expected);
      expect((await get('/issues', BOB)).pagination.total).toBe(2);
    });

    it('given a member of team A, when it reads the sub-lists, then they hold only rows of its targets', async () => {
      expect(ids((await get(`/issues/${issues.shared}/findings`, ALICE)).findings)).toEqual(
        [findingOf('a1', 'shared'), findingOf('ab', 'shared')].sort(),
      );
      expect(ids((await get(`/issues/${issues.shared}/targets`, ALICE)).targets)).toEqual([id('a1'), id('ab')].sort());
      expect(ids((await get(`/issues/${issues.shared}/targets`, ADMIN)).targets)).toEqual([id('a1'), id('ab'), id('b1')].sort());
      for (const path of [
        `/issues/${issues.onlyB}/findings`,
        `/issues/${issues.onlyB}/targets`,
        `/targets/${id('b1')}/findings`,
        `/targets/${id('b1')}/issues`,
        `/targets/${id('orphan')}/issues`,
        `/sources/${sourceOf('b1')}/findings`,
        `/findings/${findingOf('b1', 'onlyB')}/events`,
      ]) {
        expect({ path, total: (await get(path, ALICE)).pagination.total }).toEqual({ path, total: 0 });
      }
      expect(ids((await get(`/targets/${id('a1')}/issues`, ALICE)).issues)).toEqual([issues.shared, issues.onlyA].sort());
      expect((await get(`/findings/${findingOf('a1', 'shared')}/events`, ALICE)).events).toHaveLength(2);
      expect((await get(`/sources/${sourceOf('a2')}/findings`, ALICE)).findings).toHaveLength(1);
    });

    it('given callers of different teams, when they ask for the same findings page, then none is served the cached page of another', async () => {
      const first = await call('/findings?size=7', ALICE);
      const bob = await call('/findings?size=7', BOB);
      const again = await call('/findings?size=7', ALICE);
      const nobody = await call('/findings?size=7', NOBODY);
      expect(ids(bob.body.findings)).toEqual(findingsOf('b1', 'ab').sort());
      expect(ids(again.body.findings)).toEqual(ids(first.body.findings));
      expect(again.headers.get('x-cache')).toBe('HIT');
      expect(nobody.body.findings).toEqual([]);
    });
  });

  describe('single resources outside the scope are Not Found', () => {
    it('given a member of team A, when it asks for a resource of team B or of no team, then it answers 404 Not Found', async () => {
      for (const path of [
        `/findings/${findingOf('b1', 'onlyB')}`,
        `/findings/${findingOf('orphan', 'onlyB')}`,
        `/findings/${findingOf('b1', 'shared')}/mttr`,
        `/issues/${issues.onlyB}`,
        `/targets/${id('b1')}`,
        `/targets/${id('orphan')}`,
        `/targets/${id('b1')}/mttr`,
        `/sources/${sourceOf('b1')}`,
        `/sources/${sourceOf('b1')}/mttr`,
        `/issues/${issues.shared}/targets/${id('b1')}`,
        `/targets/${id('b1')}/issues/${issues.shared}`,
        `/issues/${issues.onlyB}/targets/${id('b1')}/resources/${encodeURIComponent('b1.example.com')}`,
        `/issues/${issues.onlyB}/mttr`,
      ]) {
        const res = await call(path, ALICE);
        expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: { message: 'Not Found' } });
      }
    });

    it('given a member of team A, when it asks for its own resources, then they are found', async () => {
      for (const path of [
        `/findings/${findingOf('ab', 'shared')}`,
        `/issues/${issues.shared}`,
        `/targets/${id('ab')}`,
        `/sources/${sourceOf('a1')}`,
        `/issues/${issues.shared}/targets/${id('a1')}`,
        `/targets/${id('a1')}/issues/${issues.onlyA}`,
        `/findings/${findingOf('a1', 'onlyA')}/mttr`,
      ]) {
        expect({ path, status: (await call(path, ALICE)).status }).toEqual({ path, status: 200 });
      }
    });

    it('given the per-entity MTTRs, when a member asks, then only the closed periods of its findings count', async () => {
      // Shared issue: only b1's period (24 h) is closed; A's shared findings are open.
      expect(await get(`/issues/${issues.shared}/mttr`, ADMIN)).toEqual({ mttr: 1 });
      expect(await get(`/issues/${issues.shared}/mttr`, BOB)).toEqual({ mttr: 1 });
      expect((await call(`/issues/${issues.shared}/mttr`, ALICE)).status).toBe(404);
      // Every report is of one family: 48 h on a1 and 24 h on b1.
      expect(await get(`/sources/${sourceOf('a1')}/mttr`, ADMIN)).toEqual({ mttr: 1.5 });
      expect(await get(`/sources/${sourceOf('a1')}/mttr`, ALICE)).toEqual({ mttr: 2 });
      expect(await get(`/targets/${id('a1')}/mttr`, ALICE)).toEqual({ mttr: 2 });
    });
  });

  describe('statistics are computed over the scope', () => {
    const STATS = ['/stats/open', '/stats/fixed', '/stats/mttr', '/stats/assets', '/stats/exposure', '/stats/exposure/current'];

    it("given one team's member, when it reads each statistic, then it equals the admin's with teams=<its team>", async () => {
      for (const path of STATS) {
        expect({ path, body: await get(path, ALICE) }).toEqual({ path, body: await get(`${path}?teams=${TEAM_A}`, ADMIN) });
        expect({ path, body: await get(`${path}?minScore=5`, BOB) }).toEqual({
          path,
          body: await get(`${path}?minScore=5&teams=${TEAM_B}`, ADMIN),
        });
      }
      expect((await get('/stats/open', ALICE)).open_issues).toMatchObject({ high: 1, medium: 0, low: 1, critical: 1 });
    });

    it("given a member of two teams, when it reads each statistic, then it equals the admin's with both teams", async () => {
      for (const path of STATS) {
        expect({ path, body: await get(path, BOTH) }).toEqual({ path, body: await get(`${path}?teams=${TEAM_A},${TEAM_B}`, ADMIN) });
      }
    });

    it('given a member of team A, when it reads /stats/issues, then only its findings are counted', async () => {
      const counts = (body: any) => Object.fromEntries(body.issues.map((i: any) => [i.summary, [i.open, i.fixed]]));
      expect(counts(await get('/stats/issues', ALICE))).toEqual({ 'Shared issue': [2, 0], 'Issue of A': [1, 1] });
      expect(counts(await get('/stats/issues?minScore=5', ALICE))).toEqual({ 'Shared issue': [1, 0], 'Issue of A': [1, 0] });
      expect(counts(await get('/stats/issues', ADMIN))).toEqual({ 'Shared issue': [2, 1], 'Issue of A': [1, 1], 'Issue of B': [2, 0] });
    });

    it('given a member of team A, when it reads /stats/size, then it counts its targets and what hangs off them', async () => {
      const mine = findingsOf('a1', 'a2', 'ab');
      let events = 0;
      for (const f of mine) events += (await get(`/findings/${f}/events`, ADMIN)).pagination.total;
      const expected = {
        sources: sources.filter((s) => [id('a1'), id('a2'), id('ab')].includes(s.target_id)).length,
        targets: 3,
        issues: 2,
        findings: mine.length,
        finding_events: events,
      };
      expect(await get('/stats/size', ALICE)).toEqual({ size: expected });
      expect((await get('/stats/size', ADMIN)).size).toMatchObject({ targets: 5, issues: 3, findings: 7 });
    });
  });

  describe('a caller without teams sees nothing', () => {
    it('given a token without teams, when it reads lists, statistics and resources, then they are empty, zero or Not Found', async () => {
      for (const path of ['/findings', '/issues', '/targets', '/sources', '/stats/issues', `/issues/${issues.shared}/targets`]) {
        expect({ path, total: (await get(path, NOBODY)).pagination.total }).toEqual({ path, total: 0 });
      }
      expect(await get('/stats/open', NOBODY)).toEqual({ open_issues: { critical: 0, high: 0, medium: 0, low: 0, informational: 0 } });
      expect(await get('/stats/size', NOBODY)).toEqual({ size: { sources: 0, targets: 0, issues: 0, findings: 0, finding_events: 0 } });
      expect((await get('/stats/assets', NOBODY)).assets.total).toBe(0);
      expect((await call(`/findings/${findingOf('a1', 'shared')}`, NOBODY)).status).toBe(404);
      expect((await call(`/findings?team=${TEAM_A}`, NOBODY)).status).toBe(403);
    });
  });

  describe('writes need admin or the ingest scope', () => {
    it('given a team member without the ingest scope, when it posts a report or a team association, then it answers 403 Forbidden', async () => {
      expect(await post('/checks', ALICE, scan('a1', 5, []))).toMatchObject({ status: 403, body: { message: 'Forbidden' } });
      expect(await post('/targets', ALICE, { identifier: 'a1.example.com', teams: [TEAM_C] })).toMatchObject({
        status: 403,
        body: { message: 'Forbidden' },
      });
      expect((await get(`/targets/${id('a1')}`, ADMIN)).target.teams).toEqual([TEAM_A]);
    });

    it('given a token with the ingest scope, when it posts a report and a team association, then they are accepted', async () => {
      expect((await post('/checks', INGESTER, scan('orphan', 1, [ONLY_B(6)]))).status).toBe(202);
      const created = await post('/targets', INGESTER, { identifier: 'new.example.com', teams: [TEAM_C] });
      expect(created).toMatchObject({ status: 201, body: { target: { identifier: 'new.example.com', teams: [TEAM_C] } } });
      await svc.settle();
    });
  });
});

describe('the warning of an open database API (SPEC §5.1)', () => {
  it('given no DB_API_AUTH and a HOST beyond loopback, when the service starts, then it warns', () => {
    expect(openDbApiWarning({ host: '0.0.0.0', dbApiAuth: undefined })).toMatch(/without authentication/);
    expect(openDbApiWarning({ host: '10.1.2.3', dbApiAuth: undefined })).toBeDefined();
    expect(openDbApiWarning({ host: '::', dbApiAuth: undefined })).toBeDefined();
  });

  it('given a loopback HOST or DB_API_AUTH=jwt, when the service starts, then it does not warn', () => {
    for (const host of ['127.0.0.1', '::1', 'localhost', 'LOCALHOST', '127.0.0.53'])
      expect(openDbApiWarning({ host, dbApiAuth: undefined })).toBeUndefined();
    expect(openDbApiWarning({ host: '0.0.0.0', dbApiAuth: 'jwt' })).toBeUndefined();
  });
});
