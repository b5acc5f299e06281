import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventId } from '../src/domain/ids.js';
import { findingEventListResponse, findingListResponse, findingResponse } from '../src/findings/schema.js';
import { openStatsResponse } from '../src/stats/schema.js';
import { byteOrder, epoch, failure, get, ingestInOrder } from './support/api.js';
import {
  fid,
  findings,
  I1,
  I2,
  I3,
  I5,
  idsWhere,
  loadCatalog,
  NOW,
  sid,
  T1,
  T2,
  T3,
  T4,
  TEAM_A,
  TEAM_B,
  tid,
  iid,
} from './support/api-catalog.js';
import { deleteRows } from './support/engine.js';
import { report, type VulnSpec } from './support/reports.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * GET /findings, /findings/{id} and /findings/{id}/events (SPEC §5.3–§5.5, §6.1, §6.2) on the
 * catalog of test/support/api-catalog.ts, read at now = 2024-03-01T00:00:00Z.
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch(NOW) });
  await loadCatalog(svc);
});
afterAll(() => svc.close());

const list = (query = '') => get(svc, `/findings${query ? `?${query}` : ''}`, findingListResponse);
const ids = async (query = '') => (await list(query)).findings.map((f) => f.id);
const ALL = idsWhere(() => true);

describe('GET /findings: pagination and ordering', () => {
  it('lists every finding in ascending id order with the default page size', async () => {
    const { pagination, findings: page } = await list();
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 8, more: false });
    expect(page.map((f) => f.id)).toEqual(ALL);
    expect(ALL).toEqual(byteOrder(ALL));
  });

  it('splits the list into pages of `size`, with more=true while items follow', async () => {
    expect(await list('size=3')).toMatchObject({ pagination: { limit: 3, offset: 0, total: 8, more: true } });
    expect((await list('size=3&page=2')).pagination).toEqual({ limit: 3, offset: 3, total: 8, more: true });
    const last = await list('size=3&page=3');
    expect(last.pagination).toEqual({ limit: 3, offset: 6, total: 8, more: false });
    const pages = [...(await ids('size=3')), ...(await ids('size=3&page=2')), ...last.findings.map((f) => f.id)];
    expect(pages).toEqual(ALL);
  });

  it('sets more=false when the page ends exactly at the total', async () => {
    expect((await list('size=4&page=2')).pagination).toEqual({ limit: 4, offset: 4, total: 8, more: false });
  });

  it('answers a page starting exactly at the total with an empty page', async () => {
    expect(await list('size=4&page=3')).toEqual({ pagination: { limit: 4, offset: 8, total: 8, more: false }, findings: [] });
  });

  it('answers a page starting past the total with 404 Page Not Found', async () => {
    expect(await failure(svc, '/findings?size=3&page=4')).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });

  it('answers page 1 of an empty result with 200', async () => {
    expect(await list('team=nobody')).toEqual({ pagination: { limit: 20, offset: 0, total: 0, more: false }, findings: [] });
  });

  it('orders by ascending score, ties by ascending id, with sortBy=score', async () => {
    const expected = [...findings].sort((a, b) => a.score - b.score || (a.id < b.id ? -1 : 1)).map((f) => f.id);
    expect(await ids('sortBy=score')).toEqual(expected);
  });

  it('orders by descending score, ties by ascending id, with sortBy=-score', async () => {
    const expected = [...findings].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1)).map((f) => f.id);
    expect(await ids('sortBy=-score')).toEqual(expected);
    expect(await ids('sortBy=-score&size=3&page=2')).toEqual(expected.slice(3, 6));
  });

  it('ignores a trailing slash and a JSON Content-Type on GET', async () => {
    const res = await svc.db('/findings/', { headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { findings: { id: string }[] }).findings.map((f) => f.id)).toEqual(ALL);
  });
});

describe('GET /findings: finding objects', () => {
  it('renders an OPEN finding with its exposures, last source, issue, target and teams', async () => {
    const { findings: page } = await list(`identifiers=${T1}&status=OPEN`);
    expect(page).toEqual([
      {
        id: fid(T1, I2),
        affected_resource: T1,
        details: '',
        impact_details: '',
        status: 'OPEN',
        score: 6.1,
        total_exposure: 686, // 2024-02-01 10:00 → 2024-03-01 00:00: 28 days 14 hours
        current_exposure: 686,
        sla_due: '2024-05-01T10:00:00Z', // found 2024-02-01 10:00, medium: 90 days (SPEC §12.1)
        decision: null, // no triage decision (SPEC §12.3)
        resources: [],
        issue: {
          id: iid(I2),
          summary: I2.summary,
          cwe_id: 0,
          description: I2.description,
          recommendations: [],
          reference_links: [],
          labels: ['web'],
        },
        target: { id: tid(T1), identifier: T1, teams: [TEAM_A] },
        teams: [TEAM_A],
        source: {
          id: sid('c2'),
          name: 'vulcan',
          component: 'vulcan-web',
          instance: 'c2',
          options: '{}',
          time: '2024-02-10T10:00:00Z',
          target_id: tid(T1),
        },
      },
    ]);
  });

  it('renders a FIXED finding without current_exposure', async () => {
    const [fixed] = (await list('status=FIXED')).findings;
    expect(fixed).toMatchObject({ id: fid(T1, I1), status: 'FIXED', total_exposure: 216, source: { instance: 'c1' } });
    expect(fixed).not.toHaveProperty('current_exposure');
  });

  it('takes the last source at equal times from the greatest check_id', async () => {
    const [f] = (await list(`identifiers=${T4}`)).findings;
    expect(f!.source).toMatchObject({ id: sid('c7b'), instance: 'c7b', time: '2024-02-23T00:00:00Z' });
    expect([f!.total_exposure, f!.current_exposure]).toEqual([240, 240]); // 2024-02-20 → 2024-03-01: 10 days
  });

  it('lists both teams of a target associated with two teams', async () => {
    const [f] = (await list(`identifiers=${T2}&labels=network`)).findings;
    expect([f!.target.teams, f!.teams]).toEqual([
      [TEAM_A, TEAM_B],
      [TEAM_A, TEAM_B],
    ]);
  });
});

describe('GET /findings: filters (SPEC §5.5)', () => {
  it('status selects the current status', async () => {
    expect(await ids('status=OPEN')).toEqual(idsWhere((f) => f.status === 'OPEN'));
    expect(await ids('status=FIXED')).toEqual([fid(T1, I1)]);
  });

  it("team selects the findings of that team's targets", async () => {
    expect(await ids(`team=${TEAM_A}`)).toEqual(idsWhere((f) => f.target === T1 || f.target === T2));
  });

  it('teams counts a finding of a target in two listed teams once', async () => {
    const { pagination, findings: page } = await list(`teams=${TEAM_A},${TEAM_B}`);
    expect(pagination.total).toBe(7);
    expect(page.map((f) => f.id)).toEqual(idsWhere((f) => f.target !== T4));
  });

  it('teams trims entries and drops empty ones', async () => {
    expect(await ids(`teams=%20${TEAM_B}%20,,`)).toEqual(idsWhere((f) => f.target === T2 || f.target === T3));
  });

  it('team and teams combine with AND', async () => {
    expect(await ids(`team=${TEAM_A}&teams=${TEAM_B}`)).toEqual(idsWhere((f) => f.target === T2));
  });

  it('an empty team or teams is treated as absent', async () => {
    expect(await ids('team=&teams=')).toEqual(ALL);
  });

  it('identifier matches a case-sensitive substring of the target identifier', async () => {
    expect(await ids('identifier=example.com')).toEqual(idsWhere((f) => f.target === T1 || f.target === T2));
    expect(await ids('identifier=EXAMPLE')).toEqual([]);
    expect(await ids('identifier=%25')).toEqual([]); // no wildcard characters
  });

  it('identifiermatch=true makes identifier an exact match', async () => {
    expect(await ids(`identifier=${T2}&identifiermatch=true`)).toEqual(idsWhere((f) => f.target === T2));
    expect(await ids('identifier=beta&identifiermatch=1')).toEqual([]);
    expect(await ids('identifier=beta&identifiermatch=false')).toEqual(idsWhere((f) => f.target === T2));
  });

  it('identifiers selects targets whose identifier equals one of them', async () => {
    expect(await ids(`identifiers=${T1},${T4},unknown.example.com`)).toEqual(idsWhere((f) => f.target === T1 || f.target === T4));
  });

  it('labels selects findings whose issue has at least one of them', async () => {
    expect(await ids('labels=web')).toEqual(idsWhere((f) => f.issue === I1 || f.issue === I2));
    expect(await ids('labels=network,patch')).toEqual(idsWhere((f) => f.issue === I3 || f.issue === I5));
    expect(await ids('labels=WEB')).toEqual([]);
  });

  it('minScore and maxScore bound the current score inclusively', async () => {
    expect(await ids('minScore=7')).toEqual(idsWhere((f) => f.score >= 7));
    expect(await ids('minScore=6.1&maxScore=7.5')).toEqual(idsWhere((f) => f.score >= 6.1 && f.score <= 7.5));
  });

  it('a score bound of 0 is applied', async () => {
    expect(await ids('maxScore=0')).toEqual(idsWhere((f) => f.score === 0));
    expect(await ids('minScore=0&maxScore=0')).toEqual(idsWhere((f) => f.score === 0));
    expect(await ids('minScore=0')).toEqual(ALL);
  });

  it('atDate without status lists the findings that exist at the start of that day, with exposures then', async () => {
    const { findings: page } = await list('atDate=2024-02-06');
    expect(page.map((f) => f.id)).toEqual(idsWhere((f) => f.target === T1 || f.target === T2));
    // T1/I1: found 2024-02-01 10:00, fixed 2024-02-10 10:00: OPEN at 02-06 00:00 for 4 days 14 hours.
    expect(page.find((f) => f.id === fid(T1, I1))).toMatchObject({ status: 'OPEN', total_exposure: 110, current_exposure: 110 });
  });

  it('atDate with status=FIXED selects findings FIXED at that instant', async () => {
    expect(await ids('atDate=2024-02-11&status=FIXED')).toEqual([fid(T1, I1)]);
    expect(await ids('atDate=2024-02-10&status=FIXED')).toEqual([]);
  });

  it('a range combines with the other filters', async () => {
    expect(await ids(`status=OPEN&minDate=2024-02-15&team=${TEAM_B}`)).toEqual(idsWhere((f) => f.target === T3));
    expect(await ids('status=FIXED&minDate=2024-02-10&maxDate=2024-02-10&labels=owasp')).toEqual([fid(T1, I1)]);
    expect(await ids('status=FIXED&minDate=2024-02-11')).toEqual([]);
  });

  it('every filter combines with AND', async () => {
    expect(await ids(`team=${TEAM_A}&status=OPEN&labels=web&minScore=9`)).toEqual([fid(T2, I1)]);
  });

  it('unknown parameters are ignored', async () => {
    expect(await ids('foo=bar&limit=1&offset=3')).toEqual(ALL);
  });
});

describe('GET /findings/{id}', () => {
  it('answers the finding evaluated at now', async () => {
    const { finding } = await get(svc, `/findings/${fid(T3, I2)}`, findingResponse);
    // 2024-02-15 12:00 → 2024-03-01 00:00: 14 days 12 hours.
    expect(finding).toMatchObject({
      id: fid(T3, I2),
      status: 'OPEN',
      total_exposure: 348,
      current_exposure: 348,
      target: { identifier: T3 },
    });
  });

  it('answers 404 Not Found for an unknown id and for an id that is not a UUID', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope', tid(T1)]) {
      expect(await failure(svc, `/findings/${id}`)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});

describe('GET /findings/{id}/events', () => {
  const T4_I3 = fid(T4, I3);
  const ev = (check: string) => eventId(T4_I3, sid(check));

  it('lists FOUND events latest first, equal times by ascending id', async () => {
    const { pagination, events } = await get(svc, `/findings/${T4_I3}/events`, findingEventListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 4, more: false });
    expect(events.map((e) => e.id)).toEqual([...byteOrder([ev('c7a'), ev('c7b')]), ev('c6'), ev('c5')]);
    expect(events.map((e) => e.time)).toEqual([
      '2024-02-23T00:00:00Z',
      '2024-02-23T00:00:00Z',
      '2024-02-21T00:00:00Z',
      '2024-02-20T00:00:00Z',
    ]);
  });

  it('renders each event with its finding, source, score, details and resources', async () => {
    const { events } = await get(svc, `/findings/${T4_I3}/events?size=1&page=4`, findingEventListResponse);
    expect(events).toEqual([
      { id: ev('c5'), finding_id: T4_I3, source_id: sid('c5'), score: 0, details: '', resources: [], time: '2024-02-20T00:00:00Z' },
    ]);
  });

  it('pages events like every list', async () => {
    expect((await get(svc, `/findings/${T4_I3}/events?size=3&page=2`, findingEventListResponse)).pagination).toEqual({
      limit: 3,
      offset: 3,
      total: 4,
      more: false,
    });
    expect(await failure(svc, `/findings/${T4_I3}/events?size=3&page=3`)).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });

  it('answers an empty list for an unknown finding or an id that is not a UUID', async () => {
    const empty = { pagination: { limit: 20, offset: 0, total: 0, more: false }, events: [] };
    expect(await get(svc, '/findings/00000000-0000-4000-8000-000000000000/events', findingEventListResponse)).toEqual(empty);
    expect(await get(svc, '/findings/nope/events', findingEventListResponse)).toEqual(empty);
  });
});

describe('current attributes (SPEC §3.5.6) whatever the arrival order', () => {
  // The same vulnerability reported twice per target: 01-01 with score 3 (low), 01-02 with score
  // 7.5 (high) and other details; in-order.example.com gets them in time order, reversed.example.com
  // the other way round.
  const W = { summary: 'Changing Finding', description: 'Score and details change.' };
  const older = { ...W, score: 3, details: 'old details', impact_details: 'old impact' };
  const newer = {
    ...W,
    score: 7.5,
    details: 'new details',
    impact_details: 'new impact',
    resources: [{ name: 'Ports', header: ['Port'], rows: [{ Port: '443' }] }],
  };
  let fresh: TestService;
  beforeAll(async () => {
    fresh = await startTestService({ now: () => epoch('2024-01-03T00:00:00Z') });
    const scan = (target: string, check: string, at: string, v: object) =>
      report({ check_id: check, target, end_time: at, vulnerabilities: [v as VulnSpec] });
    await ingestInOrder(fresh, [
      scan('in-order.example.com', 'a0', '2024-01-01 00:00:00', older),
      scan('in-order.example.com', 'a1', '2024-01-02 00:00:00', newer),
      scan('reversed.example.com', 'b1', '2024-01-02 00:00:00', newer),
      scan('reversed.example.com', 'b0', '2024-01-01 00:00:00', older),
    ]);
  });
  afterAll(() => fresh.close());

  it('takes score, details, impact details, resources and source from the latest FOUND event', async () => {
    const { findings: page } = await get(fresh, '/findings', findingListResponse);
    expect(
      page.map((f) => [f.target.identifier, f.score, f.details, f.impact_details, f.resources, f.source.instance, f.total_exposure]).sort(),
    ).toEqual([
      [
        'in-order.example.com',
        7.5,
        'new details',
        'new impact',
        [{ name: 'Ports', attributes: ['Port'], resources: [{ Port: '443' }] }],
        'a1',
        48,
      ],
      [
        'reversed.example.com',
        7.5,
        'new details',
        'new impact',
        [{ name: 'Ports', attributes: ['Port'], resources: [{ Port: '443' }] }],
        'b1',
        48,
      ],
    ]);
  });

  it("keeps each event's own score, details and resources", async () => {
    const [f] = (await get(fresh, '/findings?identifiers=reversed.example.com', findingListResponse)).findings;
    const { events } = await get(fresh, `/findings/${f!.id}/events`, findingEventListResponse);
    expect(events.map((e) => [e.time, e.score, e.details, e.resources])).toEqual([
      ['2024-01-02T00:00:00Z', 7.5, 'new details', [{ name: 'Ports', attributes: ['Port'], resources: [{ Port: '443' }] }]],
      ['2024-01-01T00:00:00Z', 3, 'old details', []],
    ]);
  });

  it('filters and counts by the current score', async () => {
    expect((await get(fresh, '/findings?maxScore=3', findingListResponse)).findings).toEqual([]);
    expect((await get(fresh, '/findings?minScore=7.5&maxScore=7.5', findingListResponse)).pagination.total).toBe(2);
    expect((await get(fresh, '/stats/open', openStatsResponse)).open_issues).toEqual({
      critical: 0,
      high: 2,
      medium: 0,
      low: 0,
      informational: 0,
    });
    expect((await get(fresh, '/stats/open?atDate=2024-01-02', openStatsResponse)).open_issues.high).toBe(2);
  });

  // Last in this block: it removes what the others read.
  it('renders a finding whose latest event is not kept with empty attributes, and its own row', async () => {
    const [f] = (await get(fresh, '/findings?identifiers=reversed.example.com', findingListResponse)).findings;
    expect(f!.source.instance).toBe('b1');
    await deleteRows(fresh.store, 'finding_latest_events', 'finding_id = {id:UUID}', { id: f!.id });
    // Another page size: the first page is in the response cache, which a DELETE does not reach.
    const [bare] = (await get(fresh, '/findings?identifiers=reversed.example.com&size=10', findingListResponse)).findings;
    expect(bare).toMatchObject({ id: f!.id, score: 7.5, status: 'OPEN', details: '', impact_details: '', resources: [] });
    expect(bare!.source).toMatchObject({
      id: '00000000-0000-0000-0000-000000000000',
      name: 'vulcan',
      instance: '',
      time: '1970-01-01T00:00:00Z',
    });
    expect((await get(fresh, `/findings/${f!.id}`, findingResponse)).finding).toEqual(bare);
  });
});
