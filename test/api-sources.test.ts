import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceId, targetId } from '../src/domain/ids.js';
import { entityMttrResponse, findingListResponse } from '../src/findings/schema.js';
import { sourceListResponse, sourceResponse } from '../src/sources/schema.js';
import { byteOrder, epoch, failure, get, ingest } from './support/api.js';
import { fid, I1, I2, idsWhere, loadCatalog, NOW, sid, T1, T2, T3, tid } from './support/api-catalog.js';
import { report } from './support/reports.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * The source endpoints (SPEC §2.3, §6.1, §6.3) on the catalog of test/support/api-catalog.ts plus
 * two clean reports with unusual times and options.
 */

const OPTS = 'opts.example.com';
const noOptions = {
  ...report({ check_id: 's-none', checktype_name: 'vulcan-exposed', target: OPTS, end_time: '', start_time: '2024-02-25 08:00:00' }),
  options: undefined,
};
const offset = report({
  check_id: 's-tz',
  checktype_name: 'vulcan-exposed',
  target: OPTS,
  options: '{"a":1}',
  end_time: '2024-02-26T10:00:00.750+02:00',
});
const NONE_ID = sourceId('vulcan', 'vulcan-exposed', 's-none', '');
const TZ_ID = sourceId('vulcan', 'vulcan-exposed', 's-tz', '{"a":1}');

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ now: () => epoch(NOW) });
  await loadCatalog(svc);
  await ingest(svc, [noOptions, offset]);
});
afterAll(() => svc.close());

// By time, then id: c1 02-01, c3 02-05, c2 02-10, c4 02-15, c5 02-20, c6 02-21, c7a/c7b 02-23, s-none 02-25, s-tz 02-26.
const ORDER = () => [
  sid('c1'),
  sid('c3'),
  sid('c2'),
  sid('c4'),
  sid('c5'),
  sid('c6'),
  ...byteOrder([sid('c7a'), sid('c7b')]),
  NONE_ID,
  TZ_ID,
];

describe('GET /sources', () => {
  it('lists every source by ascending time, then ascending id', async () => {
    const { pagination, sources } = await get(svc, '/sources', sourceListResponse);
    expect(pagination).toEqual({ limit: 20, offset: 0, total: 10, more: false });
    expect(sources.map((s) => s.id)).toEqual(ORDER());
  });

  it('pages sources', async () => {
    const page = await get(svc, '/sources?size=4&page=2', sourceListResponse);
    expect(page.pagination).toEqual({ limit: 4, offset: 4, total: 10, more: true });
    expect(page.sources.map((s) => s.id)).toEqual(ORDER().slice(4, 8));
    expect(await get(svc, '/sources?size=5&page=3', sourceListResponse)).toEqual({
      pagination: { limit: 5, offset: 10, total: 10, more: false },
      sources: [],
    });
    expect(await failure(svc, '/sources?size=3&page=5')).toEqual({ status: 404, body: { message: 'Page Not Found' } });
  });
});

describe('GET /sources/{id}', () => {
  it('answers the source with every field', async () => {
    expect(await get(svc, `/sources/${sid('c4')}`, sourceResponse)).toEqual({
      source: {
        id: sid('c4'),
        name: 'vulcan',
        component: 'vulcan-web',
        instance: 'c4',
        options: '{}',
        time: '2024-02-15T12:00:00Z',
        target_id: tid(T3),
      },
    });
  });

  it('renders absent options as "" and takes start_time when end_time is empty', async () => {
    const { source } = await get(svc, `/sources/${NONE_ID}`, sourceResponse);
    expect([source.options, source.time, source.target_id]).toEqual(['', '2024-02-25T08:00:00Z', targetId(OPTS)]);
  });

  it('renders a report time given with an offset and a fraction in UTC without fraction', async () => {
    expect((await get(svc, `/sources/${TZ_ID}`, sourceResponse)).source.time).toBe('2024-02-26T08:00:00Z');
  });

  it('answers 404 Not Found for an unknown id, a check id, or an id that is not a UUID', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'c4', tid(T1)]) {
      expect(await failure(svc, `/sources/${id}`)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});

describe('GET /sources/{id}/findings', () => {
  it('lists the findings the source reported, with their current status', async () => {
    const { pagination, findings } = await get(svc, `/sources/${sid('c1')}/findings`, findingListResponse);
    expect(pagination.total).toBe(2);
    expect(findings.map((f) => [f.id, f.status])).toEqual(
      byteOrder([fid(T1, I1), fid(T1, I2)]).map((id) => [id, id === fid(T1, I1) ? 'FIXED' : 'OPEN']),
    );
  });

  it('leaves out findings of the target that the source did not report', async () => {
    expect((await get(svc, `/sources/${sid('c2')}/findings`, findingListResponse)).findings.map((f) => f.id)).toEqual([fid(T1, I2)]);
  });

  it('applies the common filters and paging', async () => {
    expect((await get(svc, `/sources/${sid('c1')}/findings?status=OPEN`, findingListResponse)).findings.map((f) => f.id)).toEqual([
      fid(T1, I2),
    ]);
    expect((await get(svc, `/sources/${sid('c3')}/findings?minScore=3`, findingListResponse)).findings.map((f) => f.id)).toEqual(
      idsWhere((f) => f.target === T2 && f.score >= 3),
    );
    const page = await get(svc, `/sources/${sid('c3')}/findings?size=2&page=2&sortBy=-score`, findingListResponse);
    expect([page.pagination, page.findings.map((f) => f.score)]).toEqual([{ limit: 2, offset: 2, total: 3, more: false }, [0]]);
  });

  it('answers an empty list for a clean scan, an unknown source and an id that is not a UUID', async () => {
    const empty = { pagination: { limit: 20, offset: 0, total: 0, more: false }, findings: [] };
    for (const id of [NONE_ID, '00000000-0000-4000-8000-000000000000', 'c1']) {
      expect(await get(svc, `/sources/${id}/findings`, findingListResponse)).toEqual(empty);
    }
  });
});

describe('GET /sources/{id}/mttr', () => {
  it('answers the MTTR in days of the whole family (name, component, options) across targets', async () => {
    // Family vulcan/vulcan-web/"{}" has one closed period: T1/I1, 216 hours = 9 days; asked through
    // a source on another target that never saw that finding.
    expect(await get(svc, `/sources/${sid('c4')}/mttr`, entityMttrResponse)).toEqual({ mttr: 9 });
  });

  it('answers 404 Not Found for a family without closed periods and for unknown sources', async () => {
    for (const id of [NONE_ID, TZ_ID, '00000000-0000-4000-8000-000000000000', 'c1']) {
      expect(await failure(svc, `/sources/${id}/mttr`)).toEqual({ status: 404, body: { message: 'Not Found' } });
    }
  });
});
