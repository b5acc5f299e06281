import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findingId, issueId, sourceId, targetId } from '../src/domain/ids.js';
import { findingListResponse } from '../src/findings/schema.js';
import { issueListResponse } from '../src/issues/schema.js';
import { openStatsResponse } from '../src/stats/schema.js';
import { epoch, failure, get, ingest } from './support/api.js';
import { V, worked } from './support/reports.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * SPEC §5.2: every error row of the database API with its exact status and body, the order in
 * which the checks run, and hostile input that must never produce a 500. One finding (r1 of the
 * worked example) is enough data.
 */

const TARGET = targetId('www.example.com');
const ISSUE = issueId(V.summary, V.description!);
const F = findingId(TARGET, ISSUE, 'www.example.com');
const SOURCE = sourceId('vulcan', 'vulcan-tls', 'r1-0000', '{}');
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch('2024-01-06T10:00:00Z') });
  await ingest(svc, [worked.r1]);
});
afterAll(() => svc.close());

const FINDING_LISTS = ['/findings', `/issues/${ISSUE}/findings`, `/targets/${TARGET}/findings`, `/sources/${SOURCE}/findings`];
const PAGED = [
  ...FINDING_LISTS,
  `/findings/${F}/events`,
  '/sources',
  '/issues',
  `/issues/${ISSUE}/targets`,
  '/targets',
  `/targets/${TARGET}/issues`,
  '/stats/issues',
];
const AT_DATE = [
  ...FINDING_LISTS,
  '/stats/open',
  '/stats/fixed',
  '/stats/issues',
  '/stats/mttr',
  '/stats/exposure',
  '/stats/exposure/current',
];
const RANGE = [...FINDING_LISTS, '/stats/open', '/stats/fixed', '/stats/issues', '/stats/mttr'];
const SCORES = [
  ...FINDING_LISTS,
  '/stats/open',
  '/stats/fixed',
  '/stats/issues',
  '/stats/mttr',
  '/stats/exposure',
  '/stats/exposure/current',
];
const BOOLEAN = [...FINDING_LISTS, '/targets'];

const withQuery = (path: string, query: string) => `${path}?${query}`;
const cases = (paths: string[], queries: string[]) => paths.flatMap((p) => queries.map((q) => [withQuery(p, q)]));
const error = (status: number, message: string) => ({ status, body: { message } });

describe('SPEC §5.2 error rows', () => {
  it.each(cases(PAGED, ['page=0', 'page=-1', 'page=1.5', 'page=abc', 'page=1e3', 'page=%201']))(
    '%s is 400 Malformed Page Number',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Malformed Page Number'));
    },
  );

  it.each(cases(PAGED, ['size=0', 'size=-5', 'size=2.5', 'size=ten']))('%s is 400 Malformed Size Number', async (path) => {
    expect(await failure(svc, path)).toEqual(error(400, 'Malformed Size Number'));
  });

  it.each(cases(PAGED, ['size=101', 'size=100000000000000000000000']))('%s is 400 Size Number Too Large', async (path) => {
    expect(await failure(svc, path)).toEqual(error(400, 'Size Number Too Large'));
  });

  it('accepts the maximum page size of 100', async () => {
    const { pagination } = await get(svc, '/findings?size=100', findingListResponse);
    expect(pagination).toEqual({ limit: 100, offset: 0, total: 1, more: false });
  });

  it.each(cases(AT_DATE, ['atDate=2024-02-30', 'atDate=2023-02-29', 'atDate=20240101', 'atDate=2024-1-01', 'atDate=2024-01-01T00:00:00Z']))(
    '%s is 400 Malformed Date',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Malformed Date'));
    },
  );

  it.each(
    cases(RANGE, ['status=OPEN&minDate=2024-13-01', 'status=OPEN&maxDate=yesterday', 'status=FIXED&minDate=2024-04-31&maxDate=2024-05-01']),
  )('%s is 400 Malformed Date', async (path) => {
    expect(await failure(svc, path)).toEqual(error(400, 'Malformed Date'));
  });

  it('accepts 29 February of a leap year', async () => {
    await get(svc, '/findings?atDate=2024-02-29', findingListResponse);
  });

  it.each(cases(SCORES, ['minScore=abc', 'minScore=1.', 'minScore=.5', 'minScore=%2B1', 'maxScore=1e2', 'maxScore=NaN', 'maxScore=1,5']))(
    '%s is 400 Malformed Score',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Malformed Score'));
    },
  );

  it.each(['minScore=-1', 'minScore=0', 'maxScore=10', 'minScore=6.5&maxScore=6.50'])(
    '/findings?%s is a well-formed score',
    async (query) => {
      expect((await get(svc, `/findings?${query}`, findingListResponse)).findings.map((f) => f.id)).toEqual([F]);
    },
  );

  it.each(cases(BOOLEAN, ['identifiermatch=yes', 'identifiermatch=tRUE', 'identifiermatch=2', 'identifiermatch=on']))(
    '%s is 400 Malformed Boolean',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Malformed Boolean'));
    },
  );

  it.each(['1', 't', 'T', 'true', 'TRUE', 'True', '0', 'f', 'F', 'false', 'FALSE', 'False'])(
    'identifiermatch=%s is a well-formed boolean',
    async (value) => {
      await get(svc, `/findings?identifier=example&identifiermatch=${value}`, findingListResponse);
    },
  );

  it.each(cases(FINDING_LISTS, ['status=open', 'status=Fixed', 'status=CLOSED', 'status=%20OPEN', 'status=OPEN%20']))(
    '%s is 400 Invalid Status',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Invalid Status'));
    },
  );

  it('treats an empty status as absent', async () => {
    expect((await get(svc, '/findings?status=', findingListResponse)).findings).toHaveLength(1);
  });

  it('reads a repeated parameter by its first value, an empty first value being absent', async () => {
    expect((await get(svc, '/findings?page=&page=2', findingListResponse)).pagination.offset).toBe(0);
    expect((await get(svc, '/findings?status=FIXED&status=OPEN', findingListResponse)).findings).toEqual([]);
    expect(await failure(svc, '/findings?page=0&page=1')).toEqual(error(400, 'Malformed Page Number'));
  });

  it.each(
    cases(
      AT_DATE.filter((p) => RANGE.includes(p)),
      ['atDate=2024-01-02&minDate=2024-01-01&status=OPEN', 'atDate=2024-01-02&maxDate=2024-01-03&status=OPEN'],
    ),
  )('%s (atDate with a range) is 400 Filter parameters combination is invalid', async (path) => {
    expect(await failure(svc, path)).toEqual(error(400, 'Filter parameters combination is invalid'));
  });

  it.each(['/stats/exposure', '/stats/exposure/current'])(
    '%s ignores minDate/maxDate, which it does not accept, next to atDate',
    async (path) => {
      const res = await svc.db(`${path}?atDate=2024-01-02&minDate=2024-01-01`);
      expect(res.status).toBe(200);
    },
  );

  it.each(cases(RANGE, ['status=OPEN&minDate=2024-01-03&maxDate=2024-01-02']))(
    '%s (minDate after maxDate) is 400 Filter parameters combination is invalid',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Filter parameters combination is invalid'));
    },
  );

  it.each(cases(FINDING_LISTS, ['minDate=2024-01-01', 'maxDate=2024-01-01', 'minDate=2024-01-01&maxDate=2024-01-02']))(
    '%s (a range without status on a findings list) is 400 Filter parameters combination is invalid',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Filter parameters combination is invalid'));
    },
  );

  it.each(['/stats/open', '/stats/fixed', '/stats/issues', '/stats/mttr'])('%s accepts a range without status', async (path) => {
    const res = await svc.db(`${path}?minDate=2024-01-01&maxDate=2024-01-02`);
    expect(res.status).toBe(200);
  });

  it.each(cases(FINDING_LISTS, ['sortBy=id', 'sortBy=SCORE', 'sortBy=%2Bscore', 'sortBy=score,id']))(
    '%s is 400 Filter parameters combination is invalid',
    async (path) => {
      expect(await failure(svc, path)).toEqual(error(400, 'Filter parameters combination is invalid'));
    },
  );

  it('answers 404 Not Found for an unknown route, whatever the method', async () => {
    expect(await failure(svc, '/nothing-here')).toEqual(error(404, 'Not Found'));
    expect(await failure(svc, '/nothing-here', { method: 'PUT' })).toEqual(error(404, 'Not Found'));
    expect(await failure(svc, `/findings/${F}/events/extra`)).toEqual(error(404, 'Not Found'));
  });

  it.each([
    `/findings/${UNKNOWN}`,
    '/findings/not-a-uuid',
    `/issues/${UNKNOWN}`,
    '/issues/1',
    `/targets/${UNKNOWN}`,
    '/targets/www.example.com',
    `/sources/${UNKNOWN}`,
    '/sources/r1-0000',
  ])('%s (an unknown id) is 404 Not Found', async (path) => {
    expect(await failure(svc, path)).toEqual(error(404, 'Not Found'));
  });

  it('answers 404 Page Not Found for a page past the end, and checks validation first', async () => {
    expect(await failure(svc, '/findings?page=3&size=1')).toEqual(error(404, 'Page Not Found'));
    expect(await failure(svc, '/findings?page=3&size=1&status=open')).toEqual(error(400, 'Invalid Status'));
  });

  it.each([
    ['DELETE', '/findings'],
    ['POST', `/findings/${F}`],
    ['PUT', '/stats/open'],
    ['PATCH', '/targets'],
    ['DELETE', `/targets/${TARGET}`],
    ['POST', '/stats/exposure/current'],
  ])('%s %s (a known path, another method) is 405 Method Not Allowed', async (method, path) => {
    expect(await failure(svc, path, { method })).toEqual(error(405, 'Method Not Allowed'));
  });

  it('answers 415 Unsupported Media Type for a POST body that is not JSON', async () => {
    const init = { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{"identifier":"x"}' };
    expect(await failure(svc, '/targets', init)).toEqual(error(415, 'Unsupported Media Type'));
  });

  it('answers 422 identifier can not be void for POST /targets without identifier', async () => {
    const init = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"teams":["a"]}' };
    expect(await failure(svc, '/targets', init)).toEqual(error(422, 'identifier can not be void'));
  });

  it('answers 400 with a reason for a POST /targets body of the wrong type, before emptiness rules', async () => {
    const init = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"identifier":"","teams":"a"}' };
    const { status, body } = await failure(svc, '/targets', init);
    expect([status, body.message]).toEqual([400, expect.stringContaining('teams')]);
  });

  it('answers 400 with a reason for an invalid POST /checks body', async () => {
    const init = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"status":"FINISHED"}' };
    const { status, body } = await failure(svc, '/checks', init);
    expect(status).toBe(400);
    expect(body.message).not.toBe('');
  });
});

describe('SPEC §5.2 check order: page, size, dates, scores, boolean, status, combination, then lookup and page range', () => {
  it.each([
    ['page=0&size=0', 'Malformed Page Number'],
    ['page=x&atDate=bad', 'Malformed Page Number'],
    ['size=0&atDate=bad', 'Malformed Size Number'],
    ['size=101&atDate=bad', 'Size Number Too Large'],
    ['size=101&minScore=x', 'Size Number Too Large'],
    ['atDate=bad&minScore=x', 'Malformed Date'],
    ['maxDate=2024-02-30&minScore=x&status=bad', 'Malformed Date'],
    ['minScore=x&identifiermatch=maybe', 'Malformed Score'],
    ['maxScore=x&status=bad', 'Malformed Score'],
    ['identifiermatch=maybe&status=bad', 'Malformed Boolean'],
    ['status=bad&atDate=2024-01-01&minDate=2024-01-01', 'Invalid Status'],
    ['status=bad&sortBy=id', 'Invalid Status'],
    ['status=bad&minDate=2024-01-01', 'Invalid Status'],
    ['minDate=2024-01-01&page=99', 'Filter parameters combination is invalid'],
    ['sortBy=id&page=99', 'Filter parameters combination is invalid'],
  ])('/findings?%s answers %s', async (query, message) => {
    expect(await failure(svc, `/findings?${query}`)).toEqual(error(400, message));
  });

  it('validates the parameters of a sub-list before looking up its parent', async () => {
    expect(await failure(svc, `/issues/${UNKNOWN}/findings?status=bad`)).toEqual(error(400, 'Invalid Status'));
    expect(await failure(svc, `/targets/not-a-uuid/findings?minDate=2024-01-01`)).toEqual(
      error(400, 'Filter parameters combination is invalid'),
    );
    expect(await failure(svc, `/findings/${UNKNOWN}/events?page=0`)).toEqual(error(400, 'Malformed Page Number'));
  });

  it("answers a page past the end of an unknown parent's empty sub-list with 404 Page Not Found", async () => {
    expect(await failure(svc, `/issues/${UNKNOWN}/findings?page=2`)).toEqual(error(404, 'Page Not Found'));
    expect(await failure(svc, '/sources/x/findings?page=2')).toEqual(error(404, 'Page Not Found'));
  });

  it('checks the statistics in the same order', async () => {
    expect(await failure(svc, '/stats/open?atDate=bad&minScore=x')).toEqual(error(400, 'Malformed Date'));
    expect(await failure(svc, '/stats/mttr?minScore=x&atDate=2024-01-01&minDate=2024-01-01')).toEqual(error(400, 'Malformed Score'));
    expect(await failure(svc, '/stats/issues?page=0&atDate=bad')).toEqual(error(400, 'Malformed Page Number'));
    expect(await failure(svc, '/stats/mttr?atDate=2024-01-01&minDate=2024-01-01')).toEqual(
      error(400, 'Filter parameters combination is invalid'),
    );
  });
});

describe('configured page sizes (PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX)', () => {
  let small: TestService;
  beforeAll(async () => {
    small = await startTestService({ worker: false, env: { PAGE_SIZE_DEFAULT: '2', PAGE_SIZE_MAX: '3' } });
  });
  afterAll(() => small.close());

  it('uses the configured default size and rejects sizes over the configured maximum', async () => {
    expect((await get(small, '/issues', issueListResponse)).pagination).toEqual({ limit: 2, offset: 0, total: 0, more: false });
    expect((await get(small, '/issues?size=3', issueListResponse)).pagination.limit).toBe(3);
    expect(await failure(small, '/findings?size=4')).toEqual(error(400, 'Size Number Too Large'));
  });
});

describe('framework defaults and the health check', () => {
  it('answers HEAD like GET without a body', async () => {
    const res = await svc.db('/findings', { method: 'HEAD' });
    expect([res.status, await res.text()]).toEqual([200, '']);
  });

  it('answers GET /healthcheck with status OK while the store answers', async () => {
    expect(await json200('/healthcheck')).toEqual({ status: 'OK' });
  });
});

describe('parameters an endpoint does not take', () => {
  it('are ignored by the statistics that do not accept them', async () => {
    expect((await get(svc, '/stats/open?page=abc&status=bad&sortBy=x&identifiermatch=maybe', openStatsResponse)).open_issues.medium).toBe(
      1,
    );
    expect((await json200(`/stats/size?atDate=bad&page=0`)).size.findings).toBe(1);
    expect(await json200('/stats/exposure?labels=nothing&identifiers=none&minDate=bad')).toEqual(await json200('/stats/exposure'));
    expect(await json200('/stats/issues?team=nobody&labels=nothing')).toEqual(await json200('/stats/issues'));
    expect((await json200('/stats/assets?minScore=x&atDate=bad')).assets.total).toBe(1);
  });

  it('are ignored by single-resource endpoints', async () => {
    expect((await json200(`/findings/${F}?atDate=bad&page=0&status=bad`)).finding.id).toBe(F);
  });
});

describe('no input produces a 500', () => {
  // Long, but within Node's 16 KiB limit on the request head (beyond it Node itself answers 431).
  const long = 'x'.repeat(4000);
  const short = (path: string) => (path.length > 90 ? `${path.slice(0, 80)}… (${path.length} chars)` : path);

  it('answers a page number beyond any integer type with 404 Page Not Found', async () => {
    expect(await failure(svc, '/findings?page=100000000000000000000000')).toEqual(error(404, 'Page Not Found'));
    expect(await failure(svc, `/issues?page=${'9'.repeat(400)}`)).toEqual(error(404, 'Page Not Found'));
  });

  it('reads a score beyond any double as a bound nothing reaches', async () => {
    expect((await get(svc, `/findings?minScore=${'9'.repeat(400)}`, findingListResponse)).findings).toEqual([]);
    expect((await get(svc, `/findings?minScore=-${'9'.repeat(400)}`, findingListResponse)).findings).toHaveLength(1);
  });

  it("evaluates dates outside the store's time range literally", async () => {
    expect((await get(svc, '/findings?status=OPEN&minDate=0001-01-01&maxDate=9999-12-31', findingListResponse)).findings).toHaveLength(1);
    expect((await get(svc, '/findings?status=OPEN&atDate=9999-12-31', findingListResponse)).findings).toHaveLength(1);
    expect((await get(svc, '/findings?atDate=0001-01-01', findingListResponse)).findings).toEqual([]);
  });

  it.each(
    [
      '/findings?page=100000000000000000000000',
      '/findings?page=9007199254740993&size=100',
      '/findings?page=4294967297',
      '/findings?page=90071992547408&size=100',
      '/findings?size=18446744073709551617',
      `/findings?minScore=${'9'.repeat(400)}`,
      `/findings?maxScore=-${'9'.repeat(400)}`,
      '/findings?minScore=-0',
      '/findings?atDate=9999-12-31',
      '/findings?atDate=0001-01-01',
      '/findings?status=OPEN&minDate=0001-01-01&maxDate=9999-12-31',
      '/findings?status=FIXED&minDate=0001-01-01&maxDate=9999-12-31',
      '/findings?status=FIXED&minDate=9999-12-31',
      '/stats/open?atDate=9999-12-31',
      '/stats/fixed?minDate=0001-01-01&maxDate=9999-12-31',
      '/stats/issues?minDate=9999-12-31',
      '/stats/issues?page=100000000000000000000000',
      '/stats/issues?page=4294967297&size=100',
      '/stats/mttr?minDate=0001-01-01&maxDate=9999-12-31',
      '/stats/exposure?atDate=9999-12-31',
      '/stats/exposure/current?atDate=0001-01-01',
      `/findings?identifier=${long}`,
      `/findings?team=${long}&teams=${long},${long}`,
      `/targets?identifiers=${'a,'.repeat(2000)}`,
      `/findings?labels=${encodeURIComponent('ラベル,😀,\u0000')}`,
      `/findings?identifier=%00&identifiermatch=true`,
      `/findings?identifier=%FF%FE`,
      '/findings?teams=,,,&identifiers=,&labels=,',
      '/findings?status=OPEN&status=FIXED&page=1&page=2',
      '/findings?page=&page=2',
      '/findings?sortBy=score&sortBy=-score',
      `/targets?identifier=${encodeURIComponent("' OR 1=1 --")}`,
      '/findings/%00',
      '/findings/%ZZ',
      `/findings/${F.toUpperCase()}`,
      `/findings/${F}%00`,
      '/issues/%E0%A4%A/targets',
      `/issues/${ISSUE}/targets/${TARGET}/resources/%ZZ`,
      `/issues/${ISSUE}/targets/${TARGET}/resources/${encodeURIComponent(long)}`,
      `/targets/${TARGET}/issues/${ISSUE}/resources/%00`,
      '/sources/%F0%9F%98%80/mttr',
      '/stats/assets?identifiers=%00&labels=%00&teams=%00',
    ].map((path) => ({ path, name: short(path) })),
  )('GET $name answers without a server error', async ({ path }) => {
    const res = await svc.db(path);
    const text = await res.text();
    expect(res.status, text).toBeLessThan(500);
    expect(res.status === 200 || JSON.parse(text).message !== undefined).toBe(true);
  });
});

async function json200(path: string) {
  const res = await svc.db(path);
  expect(res.status).toBe(200);
  return res.json() as Promise<any>;
}
