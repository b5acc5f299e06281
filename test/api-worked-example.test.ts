import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findingId, issueId, sourceId, targetId } from '../src/domain/ids.js';
import { entityMttrResponse, findingEventListResponse, findingListResponse, findingResponse } from '../src/findings/schema.js';
import { sourceListResponse } from '../src/sources/schema.js';
import {
  currentExposureStatsResponse,
  exposureStatsResponse,
  fixedStatsResponse,
  mttrStatsResponse,
  openStatsResponse,
} from '../src/stats/schema.js';
import { epoch, failure, get, ingestInOrder } from './support/api.js';
import { report, V, worked } from './support/reports.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * SPEC §3.8 and §4.3 through the database API: the worked example's finding F (reports r1–r4 of
 * family vulcan/vulcan-tls/"{}" on www.example.com, plus a clean report of another family),
 * ingested out of order, read at now = 2024-01-06T10:00:00Z.
 */

const NOW = '2024-01-06T10:00:00Z';
const TARGET = targetId('www.example.com');
const ISSUE = issueId(V.summary, V.description!);
const F = findingId(TARGET, ISSUE, 'www.example.com');
const src = (checkId: string, options = '{}') => sourceId('vulcan', 'vulcan-tls', checkId, options);
const otherFamily = report({ check_id: 'r5-0000', options: '{"port":8443}', end_time: '2024-01-05 12:00:00', vulnerabilities: [] });

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch(NOW) });
  // Arrival order r3, r1, r4, otherFamily, r2: the result must not depend on it (SPEC §3.6).
  await ingestInOrder(svc, [worked.r3, worked.r1, worked.r4, otherFamily, worked.r2]);
});
afterAll(() => svc.close());

const findingIdsOf = async (query: string) => (await get(svc, `/findings?${query}`, findingListResponse)).findings.map((f) => f.id);

describe('SPEC §3.8: the finding at now', () => {
  it('is OPEN with total_exposure 72 and current_exposure 24', async () => {
    const { finding } = await get(svc, `/findings/${F}`, findingResponse);
    expect(finding).toMatchObject({ id: F, status: 'OPEN', total_exposure: 72, current_exposure: 24, score: 6.5 });
  });

  it('shows r4 as its last source, with the issue, target and details of the latest detection', async () => {
    const { finding } = await get(svc, `/findings/${F}`, findingResponse);
    expect(finding).toEqual({
      id: F,
      affected_resource: 'www.example.com',
      details: 'TLSv1.0 accepted on port 443',
      impact_details: '',
      status: 'OPEN',
      score: 6.5,
      total_exposure: 72,
      current_exposure: 24,
      sla_due: '2024-04-04T10:00:00Z', // P2 found 2024-01-05 10:00, medium: 90 days (SPEC §12.1)
      decision: null, // no triage decision (SPEC §12.3)
      resources: [],
      issue: {
        id: ISSUE,
        summary: V.summary,
        cwe_id: 0,
        description: V.description,
        recommendations: [],
        reference_links: [],
        labels: ['TLS', 'issue'],
      },
      target: { id: TARGET, identifier: 'www.example.com', teams: [] },
      teams: [],
      source: {
        id: src('r4-0000'),
        name: 'vulcan',
        component: 'vulcan-tls',
        instance: 'r4-0000',
        options: '{}',
        time: '2024-01-05T10:00:00Z',
        target_id: TARGET,
      },
    });
  });

  it('has three FOUND events, r4, r2 and r1, latest first', async () => {
    const { events, pagination } = await get(svc, `/findings/${F}/events`, findingEventListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 3, more: false });
    expect(events.map((e) => [e.source_id, e.time])).toEqual([
      [src('r4-0000'), '2024-01-05T10:00:00Z'],
      [src('r2-0000'), '2024-01-02T10:00:00Z'],
      [src('r1-0000'), '2024-01-01T10:00:00Z'],
    ]);
    expect(events[0]).toMatchObject({ finding_id: F, score: 6.5, details: 'TLSv1.0 accepted on port 443', resources: [] });
  });

  it('has an MTTR of 2 days (one closed period of 48 hours)', async () => {
    expect(await get(svc, `/findings/${F}/mttr`, entityMttrResponse)).toEqual({ mttr: 2 });
  });

  it('is counted as one OPEN medium finding with a 48 hour MTTR in the statistics', async () => {
    expect((await get(svc, '/stats/open', openStatsResponse)).open_issues).toEqual({
      critical: 0,
      high: 0,
      medium: 1,
      low: 0,
      informational: 0,
    });
    expect((await get(svc, '/stats/fixed', fixedStatsResponse)).fixed_issues).toEqual({
      critical: 0,
      high: 0,
      medium: 0,
      low: 0,
      informational: 0,
    });
    expect((await get(svc, '/stats/mttr', mttrStatsResponse)).mttr).toEqual({
      total: 48,
      critical: 0,
      high: 0,
      medium: 48,
      low: 0,
      informational: 0,
    });
  });

  it('gives exposure statistics of 72 total and 24 current hours', async () => {
    const { exposure } = await get(svc, '/stats/exposure', exposureStatsResponse);
    expect(exposure).toEqual({ percentile_10: 72, percentile_25: 72, percentile_50: 72, percentile_75: 72, percentile_90: 72, mean: 72 });
    const { current_exposure } = await get(svc, '/stats/exposure/current', currentExposureStatsResponse);
    expect(current_exposure).toEqual({
      percentile_10: 24,
      percentile_25: 24,
      percentile_50: 24,
      percentile_75: 24,
      percentile_90: 24,
      mean: 24,
    });
  });

  it('keeps the report of another family as a source that detected nothing', async () => {
    const { sources } = await get(svc, '/sources', sourceListResponse);
    expect(sources.map((s) => s.instance)).toEqual(['r1-0000', 'r2-0000', 'r3-0000', 'r4-0000', 'r5-0000']);
    expect(await get(svc, `/sources/${src('r5-0000', '{"port":8443}')}/findings`, findingListResponse)).toEqual({
      pagination: { limit: 20, offset: 0, total: 0, more: false },
      findings: [],
    });
    expect(await failure(svc, `/sources/${src('r5-0000', '{"port":8443}')}/mttr`)).toEqual({ status: 404, body: { message: 'Not Found' } });
  });

  it('lists the finding under the sources that reported it, not under the clean scan r3', async () => {
    for (const id of ['r1-0000', 'r2-0000', 'r4-0000']) {
      expect((await get(svc, `/sources/${src(id)}/findings`, findingListResponse)).findings.map((f) => f.id)).toEqual([F]);
    }
    expect((await get(svc, `/sources/${src('r3-0000')}/findings`, findingListResponse)).findings).toEqual([]);
  });

  it('gives the family of any of its sources, the clean scan included, an MTTR of 2 days', async () => {
    expect(await get(svc, `/sources/${src('r3-0000')}/mttr`, entityMttrResponse)).toEqual({ mttr: 2 });
  });
});

describe('SPEC §4.3: ranges and atDate on the worked example', () => {
  it('rule 1 matches status=OPEN from 01-04 to 01-05: P2 started on 01-05', async () => {
    expect(await findingIdsOf('status=OPEN&minDate=2024-01-04&maxDate=2024-01-05')).toEqual([F]);
  });

  it('rule 1 does not match status=OPEN on 01-02: r2 was a repeated detection, not a new period', async () => {
    expect(await findingIdsOf('status=OPEN&minDate=2024-01-02&maxDate=2024-01-02')).toEqual([]);
  });

  it('rule 1 still matches a finding that was also fixed within the range (01-01 to 01-03)', async () => {
    expect(await findingIdsOf('status=OPEN&minDate=2024-01-01&maxDate=2024-01-03')).toEqual([F]);
  });

  it('rule 1 matches the reopening alone (01-05 to 01-05)', async () => {
    expect(await findingIdsOf('status=OPEN&minDate=2024-01-05&maxDate=2024-01-05')).toEqual([F]);
  });

  it('rule 1 with only maxDate includes the whole last day, and excludes earlier days', async () => {
    expect(await findingIdsOf('status=OPEN&maxDate=2024-01-01')).toEqual([F]);
    expect(await findingIdsOf('status=OPEN&maxDate=2023-12-31')).toEqual([]);
  });

  it('rule 1 with only minDate is unbounded above', async () => {
    expect(await findingIdsOf('status=OPEN&minDate=2024-01-05')).toEqual([F]);
    expect(await findingIdsOf('status=OPEN&minDate=2024-01-06')).toEqual([]);
  });

  it('rule 2 matches status=FIXED from 01-03 to 01-04: fixed on 01-03 and still FIXED at the end', async () => {
    expect(await findingIdsOf('status=FIXED&minDate=2024-01-03&maxDate=2024-01-04')).toEqual([F]);
  });

  it('rule 2 does not match status=FIXED from 01-03 to 01-05: reopened on 01-05 10:00', async () => {
    expect(await findingIdsOf('status=FIXED&minDate=2024-01-03&maxDate=2024-01-05')).toEqual([]);
  });

  it('rule 2 with only minDate ends the range at now, when the finding is OPEN again', async () => {
    expect(await findingIdsOf('status=FIXED&minDate=2024-01-03')).toEqual([]);
  });

  it('rule 2 does not match a range that ends before the fix', async () => {
    expect(await findingIdsOf('status=FIXED&minDate=2024-01-01&maxDate=2024-01-02')).toEqual([]);
  });

  it('range results show the current status and exposures', async () => {
    const { findings } = await get(svc, '/findings?status=FIXED&minDate=2024-01-03&maxDate=2024-01-04', findingListResponse);
    expect(findings[0]).toMatchObject({ status: 'OPEN', total_exposure: 72, current_exposure: 24 });
  });

  it('atDate=2024-01-04 (inside the fixed gap) gives FIXED with total_exposure 48 and no current_exposure', async () => {
    const { findings } = await get(svc, '/findings?atDate=2024-01-04', findingListResponse);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ id: F, status: 'FIXED', total_exposure: 48 });
    expect(findings[0]).not.toHaveProperty('current_exposure');
  });

  it('atDate=2024-01-02 (inside P1) gives OPEN with total_exposure 14 and current_exposure 14', async () => {
    const { findings } = await get(svc, '/findings?atDate=2024-01-02', findingListResponse);
    expect(findings.map((f) => [f.id, f.status, f.total_exposure, f.current_exposure])).toEqual([[F, 'OPEN', 14, 14]]);
  });

  it('atDate=2024-01-06 (inside P2) gives OPEN with 48 + 14 total hours and 14 current hours', async () => {
    const { findings } = await get(svc, '/findings?atDate=2024-01-06&status=OPEN', findingListResponse);
    expect(findings.map((f) => [f.status, f.total_exposure, f.current_exposure])).toEqual([['OPEN', 62, 14]]);
  });

  it('atDate=2024-01-01 (before the first detection at 10:00) lists nothing: F does not exist yet', async () => {
    expect(await findingIdsOf('atDate=2024-01-01')).toEqual([]);
    expect(await findingIdsOf('atDate=2024-01-01&status=FIXED')).toEqual([]);
    expect(await findingIdsOf('atDate=2024-01-01&status=OPEN')).toEqual([]);
  });

  it('atDate with a status selects the state at that instant', async () => {
    expect(await findingIdsOf('atDate=2024-01-04&status=FIXED')).toEqual([F]);
    expect(await findingIdsOf('atDate=2024-01-04&status=OPEN')).toEqual([]);
    expect(await findingIdsOf('atDate=2024-01-02&status=FIXED')).toEqual([]);
  });

  it('a future atDate is evaluated literally', async () => {
    const { findings } = await get(svc, '/findings?atDate=2024-01-10', findingListResponse);
    // P1 48 h + P2 from 01-05 10:00 to 01-10 00:00 (110 h).
    expect(findings.map((f) => [f.status, f.total_exposure, f.current_exposure])).toEqual([['OPEN', 158, 110]]);
  });

  it('the statistics follow the same rules and the state at atDate', async () => {
    const medium = (n: number) => ({ critical: 0, high: 0, medium: n, low: 0, informational: 0 });
    expect((await get(svc, '/stats/open?atDate=2024-01-04', openStatsResponse)).open_issues).toEqual(medium(0));
    expect((await get(svc, '/stats/fixed?atDate=2024-01-04', fixedStatsResponse)).fixed_issues).toEqual(medium(1));
    expect((await get(svc, '/stats/open?minDate=2024-01-02&maxDate=2024-01-02', openStatsResponse)).open_issues).toEqual(medium(0));
    expect((await get(svc, '/stats/open?minDate=2024-01-04&maxDate=2024-01-05', openStatsResponse)).open_issues).toEqual(medium(1));
    expect((await get(svc, '/stats/fixed?minDate=2024-01-03&maxDate=2024-01-04', fixedStatsResponse)).fixed_issues).toEqual(medium(1));
    expect((await get(svc, '/stats/fixed?minDate=2024-01-03&maxDate=2024-01-05', fixedStatsResponse)).fixed_issues).toEqual(medium(0));
  });

  it('exposure statistics at atDate=2024-01-04 give 48 total hours and no current exposure', async () => {
    const { exposure } = await get(svc, '/stats/exposure?atDate=2024-01-04', exposureStatsResponse);
    expect(exposure.percentile_50).toBe(48);
    const { current_exposure } = await get(svc, '/stats/exposure/current?atDate=2024-01-04', currentExposureStatsResponse);
    expect(current_exposure).toEqual({ percentile_10: 0, percentile_25: 0, percentile_50: 0, percentile_75: 0, percentile_90: 0, mean: 0 });
  });

  it('MTTR statistics with a range count only periods fixed in it', async () => {
    expect((await get(svc, '/stats/mttr?minDate=2024-01-03&maxDate=2024-01-03', mttrStatsResponse)).mttr.medium).toBe(48);
    expect((await get(svc, '/stats/mttr?minDate=2024-01-04', mttrStatsResponse)).mttr.total).toBe(0);
  });
});

describe('SPEC §4.2/§4.3 at the edges: reopen and re-fix inside a range, half-open periods', () => {
  // cycle: OPEN 01-01 10:00, FIXED 01-03 10:00, OPEN 01-05 10:00, FIXED 01-07 10:00.
  // edge:  OPEN 01-01 00:00, FIXED 01-03 00:00 (period boundaries at the start of days).
  let edges: TestService;
  const CYCLE = findingId(targetId('cycle.example.com'), ISSUE, 'cycle.example.com');
  const EDGE = findingId(targetId('edge.example.com'), ISSUE, 'edge.example.com');
  beforeAll(async () => {
    edges = await startTestService({ now: () => epoch('2024-01-10T00:00:00Z') });
    const on = (target: string, check: string, at: string, found: boolean) =>
      report({ check_id: check, target, end_time: at, vulnerabilities: found ? [V] : [] });
    await ingestInOrder(edges, [
      on('cycle.example.com', 'c1', '2024-01-01 10:00:00', true),
      on('cycle.example.com', 'c2', '2024-01-03 10:00:00', false),
      on('cycle.example.com', 'c3', '2024-01-05 10:00:00', true),
      on('cycle.example.com', 'c4', '2024-01-07 10:00:00', false),
      on('edge.example.com', 'e1', '2024-01-01 00:00:00', true),
      on('edge.example.com', 'e2', '2024-01-03 00:00:00', false),
      on('halves.example.com', 'h1', '2024-01-08 00:00:00', true),
      on('halves.example.com', 'h2', '2024-01-08 01:30:00', false),
      on('halves.example.com', 'h3', '2024-01-08 03:00:00', true),
      on('halves.example.com', 'h4', '2024-01-08 04:30:00', false),
      on('halfopen.example.com', 'o1', '2024-01-09 20:00:00', true),
      on('halfopen.example.com', 'o2', '2024-01-09 21:30:00', false),
      on('halfopen.example.com', 'o3', '2024-01-09 22:30:00', true),
    ]);
    await json(edges.postJson('/targets', { identifier: 'halves.example.com', teams: ['halves'] }), 201);
    await json(edges.postJson('/targets', { identifier: 'halfopen.example.com', teams: ['halfopen'] }), 201);
  });
  afterAll(() => edges.close());

  const idsOf = async (query: string) => (await get(edges, `/findings?${query}`, findingListResponse)).findings.map((f) => f.id);

  it('rule 2 matches FIXED → OPEN → FIXED inside the range', async () => {
    expect(await idsOf('status=FIXED&minDate=2024-01-02&maxDate=2024-01-08&identifiers=cycle.example.com')).toEqual([CYCLE]);
  });

  it('rule 2 does not match FIXED → OPEN still open at the end of the range', async () => {
    expect(await idsOf('status=FIXED&minDate=2024-01-03&maxDate=2024-01-06&identifiers=cycle.example.com')).toEqual([]);
  });

  it('rule 2 with only minDate matches a finding fixed again before now', async () => {
    expect(await idsOf('status=FIXED&minDate=2024-01-07&identifiers=cycle.example.com')).toEqual([CYCLE]);
  });

  it('rule 2 with only maxDate matches a fix on that day, the last period started by its end being closed', async () => {
    expect(await idsOf('status=FIXED&maxDate=2024-01-03&identifiers=cycle.example.com')).toEqual([CYCLE]);
  });

  it('rule 1 matches the re-detection day', async () => {
    expect(await idsOf('status=OPEN&minDate=2024-01-05&maxDate=2024-01-05&identifiers=cycle.example.com')).toEqual([CYCLE]);
  });

  it('the range bounds are inclusive of minDate 00:00:00 and of the whole maxDate day', async () => {
    expect(await idsOf('status=OPEN&minDate=2024-01-01&maxDate=2024-01-01&identifiers=edge.example.com')).toEqual([EDGE]);
    expect(await idsOf('status=OPEN&maxDate=2023-12-31&identifiers=edge.example.com')).toEqual([]);
    expect(await idsOf('status=FIXED&minDate=2024-01-03&maxDate=2024-01-03&identifiers=edge.example.com')).toEqual([EDGE]);
    expect(await idsOf('status=FIXED&maxDate=2024-01-02&identifiers=edge.example.com')).toEqual([]);
  });

  it('a finding is OPEN at the instant its period starts, with exposures of 0', async () => {
    const { findings } = await get(edges, '/findings?atDate=2024-01-01&identifiers=edge.example.com', findingListResponse);
    expect(findings.map((f) => [f.status, f.total_exposure, f.current_exposure])).toEqual([['OPEN', 0, 0]]);
  });

  it('a finding is FIXED at the instant its period ends', async () => {
    const { findings } = await get(edges, '/findings?atDate=2024-01-03&identifiers=edge.example.com', findingListResponse);
    expect(findings.map((f) => [f.status, f.total_exposure, f.current_exposure])).toEqual([['FIXED', 48, undefined]]);
  });

  it('atDate inside the second period counts both periods in total_exposure and the second in current_exposure', async () => {
    const { findings } = await get(edges, '/findings?atDate=2024-01-06&identifiers=cycle.example.com', findingListResponse);
    expect(findings.map((f) => [f.status, f.total_exposure, f.current_exposure])).toEqual([['OPEN', 62, 14]]);
  });

  it('total_exposure floors the sum of the periods, TTR floors each period: two closed periods of 1 h 30 min', async () => {
    const HALVES = findingId(targetId('halves.example.com'), ISSUE, 'halves.example.com');
    expect((await get(edges, `/findings/${HALVES}`, findingResponse)).finding).toMatchObject({ status: 'FIXED', total_exposure: 3 });
    expect(
      (await get(edges, '/findings?atDate=2024-01-09&team=halves', findingListResponse)).findings.map((f) => f.total_exposure),
    ).toEqual([3]);
    expect((await get(edges, '/stats/exposure?team=halves', exposureStatsResponse)).exposure.mean).toBe(3);
    expect((await get(edges, '/stats/exposure?team=halves&atDate=2024-01-09', exposureStatsResponse)).exposure.mean).toBe(3);
    expect((await get(edges, '/stats/mttr?team=halves', mttrStatsResponse)).mttr).toMatchObject({ total: 1, medium: 1 });
    expect(await get(edges, `/findings/${HALVES}/mttr`, entityMttrResponse)).toEqual({ mttr: 0.04 }); // 1 h / 24
  });

  it("an OPEN finding's total_exposure at now floors closed time plus time since reopening: 1 h 30 min twice", async () => {
    const { findings } = await get(edges, '/findings?team=halfopen', findingListResponse);
    expect(findings.map((f) => [f.status, f.total_exposure, f.current_exposure])).toEqual([['OPEN', 3, 1]]);
    expect((await get(edges, '/stats/exposure?team=halfopen', exposureStatsResponse)).exposure.mean).toBe(3);
    expect((await get(edges, '/stats/exposure/current?team=halfopen', currentExposureStatsResponse)).current_exposure.mean).toBe(1);
  });

  it('the current state of a twice-fixed finding is FIXED with both periods in total_exposure', async () => {
    const { finding } = await get(edges, `/findings/${CYCLE}`, findingResponse);
    expect([finding.status, finding.total_exposure, finding.current_exposure, finding.source.instance]).toEqual([
      'FIXED',
      96,
      undefined,
      'c3',
    ]);
  });
});
