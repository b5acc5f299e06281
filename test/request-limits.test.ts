import net from 'node:net';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbApi } from '../src/app.js';
import { MAX_QUERY_PARAMS, parseQueryString, tooManyParams } from '../src/http/query.js';
import { createLogger } from '../src/log.js';
import { createMetricsApi } from '../src/metrics/app.js';
import { tokenKeys } from '../src/auth/keys.js';
import { ADMIN_TOKEN, METRICS_SECRET, metricsToken } from './support/metrics.js';
import { json, startTestService, type TestService } from './support/service.js';

/**
 * SPEC §5.6 request limits: linear-time handling of long paths and query strings, the parameter
 * count limit of both APIs, and the POST /targets caps.
 *
 * The service keeps Node's 16 KiB limit on a request head (longer ones answer 431 before Koa sees
 * them), so the 100× sizes go through the same two apps mounted on a server of this file with a
 * larger head limit: the whole stack (Koa, the routers, our middleware) over HTTP.
 */

const TEAM = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
const OTHER_TEAM = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';

const params = (n: number) => Array.from({ length: n }, (_, i) => `p${i}=1`).join('&');
const bearer = (token = ADMIN_TOKEN) => ({ headers: { Authorization: `Bearer ${token}` } });

/** A request's status, body and how long it took (ms). */
async function timed(url: string, init?: RequestInit) {
  const started = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - started };
}

/**
 * The apps on a server of this file with a head limit big enough for the 100× cases (1.5 MB of
 * slashes, 2 MB of query string). `handlingMs` is how long the server took over its last request,
 * from the parsed head to the last byte of the answer: building and sending a 2 MB URL costs the
 * client (fetch) about as much again, which is not the service's to answer for.
 */
function listen(handler: http.RequestListener) {
  const timing = { handlingMs: Number.NaN };
  const server = http.createServer({ maxHeaderSize: 8 * 1024 * 1024 }, (req, res) => {
    const started = performance.now();
    res.on('finish', () => (timing.handlingMs = performance.now() - started));
    handler(req, res);
  });
  return new Promise<{ url: string; server: http.Server; timing: typeof timing }>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, timing })),
  );
}

describe('request limits (SPEC §5.6)', () => {
  let svc: TestService;
  let bigDb: Awaited<ReturnType<typeof listen>>;
  let bigMetrics: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    svc = await startTestService({ worker: false, env: { JWT_SECRET: METRICS_SECRET } });
    // Warm up: the first request of a process compiles the whole route stack.
    await json(svc.db('/targets'));
    const log = createLogger('silent');
    bigDb = await listen(
      createDbApi({
        store: svc.store,
        suppression: svc.suppression,
        queue: svc.queue!,
        log,
        maxReportBytes: 1 << 20,
        pageSizeDefault: 20,
        pageSizeMax: 100,
        locks: svc.locks,
        totals: svc.totals,
      }).callback(),
    );
    bigMetrics = await listen(
      createMetricsApi({
        store: svc.store,
        suppression: svc.suppression,
        log,
        keys: tokenKeys(svc.config.jwt, svc.config.dataDir),
      }).callback(),
    );
  });
  afterAll(async () => {
    bigDb.server.close();
    bigMetrics.server.close();
    await svc.close();
  });

  describe('linear time', () => {
    it('answers a path of 15,000 slashes in milliseconds, in both APIs', async () => {
      const slashes = '/'.repeat(15_000);
      // The shape that made /\/+$/ quadratic: a run of slashes, something else, a trailing slash.
      for (const path of [slashes, `${slashes}x/`, `/findings${slashes}`]) {
        const r = await timed(`${svc.dbApiUrl}${path}`);
        expect(r.ms).toBeLessThan(1000);
        expect(r.status).toBe(path.startsWith('/findings') ? 200 : 404);
      }
      const metrics = await timed(`${svc.metricsApiUrl}/api/v1/stats/open${slashes}`, bearer());
      expect(metrics).toMatchObject({ status: 200 });
      expect(metrics.ms).toBeLessThan(1000);
    });

    it('answers 5,000 repeats of a key in milliseconds, in both APIs', async () => {
      // `a&` keeps 5,000 repeats within the service's 16 KiB head; `a=1&` goes to the big-head server.
      for (const url of [`${svc.dbApiUrl}/findings?${'a&'.repeat(5000)}`, `${bigDb.url}/findings?${'a=1&'.repeat(5000)}`]) {
        const r = await timed(url);
        expect(r).toMatchObject({ status: 400, text: JSON.stringify({ message: 'Too Many Parameters' }) });
        expect(r.ms).toBeLessThan(1000);
      }
      const metrics = await timed(`${bigMetrics.url}/api/v1/stats/open?${'a=1&'.repeat(5000)}`, bearer());
      expect(metrics).toMatchObject({ status: 422 });
      expect(metrics.ms).toBeLessThan(1000);
    });

    it('answers 100 times those sizes (1.5 MB of slashes, 500,000 repeats) well under a second', async () => {
      const slashes = '/'.repeat(1_500_000);
      const repeats = 'a=1&'.repeat(500_000);
      const cases = [
        { app: bigDb, path: `${slashes}x/`, status: 404 },
        { app: bigDb, path: `/findings${slashes}`, status: 200 },
        { app: bigDb, path: `/findings?${repeats}`, status: 400 },
        { app: bigMetrics, path: `/api/v1/stats/open${slashes}`, status: 200 },
        { app: bigMetrics, path: `/api/v1/stats/open?${repeats}`, status: 422 },
      ];
      for (const { app, path, status } of cases) {
        const r = await timed(`${app.url}${path}`, bearer());
        expect({ path: path.slice(0, 30), status: r.status }).toEqual({ path: path.slice(0, 30), status });
        expect(app.timing.handlingMs).toBeLessThan(1000);
      }
    });

    it('keeps Node’s 16 KiB limit on a request head, answered in each API’s error shape', async () => {
      const r = await timed(`${svc.dbApiUrl}/findings?${'a=1&'.repeat(5000)}`);
      expect(r.status).toBe(431);
      expect(JSON.parse(r.text)).toEqual({ message: 'Request Header Fields Too Large' });
      const m = await timed(`${svc.metricsApiUrl}/api/v1/stats/open?${'a=1&'.repeat(5000)}`);
      expect(m.status).toBe(431);
      expect(JSON.parse(m.text)).toEqual({ code: 431, error: 'Request Header Fields Too Large', type: 'Validation' });
    });

    it('answers a request line Node refuses (a raw byte over 0x7F) with a JSON 400', async () => {
      const { port } = new URL(svc.dbApiUrl!);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1', () =>
          socket.end(Buffer.from('GET /findings\xff HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1')),
        );
        let text = '';
        socket.on('data', (d) => (text += d.toString('latin1')));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(answer.slice(answer.indexOf('\r\n\r\n') + 4)).toBe('{"message":"Bad Request"}');
    });

    it('parses query strings as Koa did, repeated keys as arrays in order', () => {
      const q = parseQueryString('a=1&b=%zz&c=x+y&d&&e=%E2%82%AC&a=2&__proto__=1&a=3');
      expect({ ...q }).toEqual({ a: ['1', '2', '3'], b: '%zz', c: 'x y', d: '', e: '€', ['__proto__']: '1' });
      expect(Object.getPrototypeOf(q)).toBe(Object.prototype);
      expect(tooManyParams(q)).toBe(false);
      const started = performance.now();
      expect(tooManyParams(parseQueryString('a=1&'.repeat(500_000)))).toBe(true);
      expect(performance.now() - started).toBeLessThan(1000);
    });
  });

  describe('Too Many Parameters', () => {
    it('database API: 256 parameters are fine, 257 answer 400', async () => {
      expect(MAX_QUERY_PARAMS).toBe(256);
      await json(svc.db(`/targets?${params(256)}`), 200);
      expect(await json(svc.db(`/targets?${params(257)}`), 400)).toEqual({ message: 'Too Many Parameters' });
      // Repeats count, and empty pieces do not.
      expect(await json(svc.db(`/findings?${'a=1&'.repeat(257)}`), 400)).toEqual({ message: 'Too Many Parameters' });
      await json(svc.db(`/findings?${params(256)}&&&`), 200);
    });

    it('database API: the limit comes before routing and before any other parameter error', async () => {
      expect(await json(svc.db(`/no-such-route?${params(257)}`), 400)).toEqual({ message: 'Too Many Parameters' });
      expect(await json(svc.db(`/findings?page=0&${params(257)}`), 400)).toEqual({ message: 'Too Many Parameters' });
    });

    it('metrics API: 256 parameters are fine, 257 answer 422 Invalid query params', async () => {
      const ok = await timed(`${svc.metricsApiUrl}/api/v1/stats/open?${params(256)}`, bearer());
      expect(ok.status).toBe(200);
      for (const path of [`stats/open?${params(257)}`, `teams/${TEAM}/stats/mttr?${params(257)}`]) {
        const r = await timed(`${svc.metricsApiUrl}/api/v1/${path}`, bearer());
        expect(r.status).toBe(422);
        expect(JSON.parse(r.text)).toEqual({ code: 422, error: 'Invalid query params', type: 'Validation' });
      }
    });

    it('metrics API: keeps the SPEC §8.2 order (404, 401, team_id 422, 403 before the parameters)', async () => {
      const many = params(257);
      const base = `${svc.metricsApiUrl}/api/v1`;
      expect((await timed(`${base}/no-such-route?${many}`, bearer())).status).toBe(404);
      expect((await timed(`${base}/stats/open?${many}`)).status).toBe(401);
      const malformed = await timed(`${base}/teams/not-a-uuid/stats/open?${many}`, bearer());
      expect(JSON.parse(malformed.text)).toMatchObject({ code: 422, error: 'ID is malformed' });
      const member = metricsToken({ teams: [TEAM] });
      expect((await timed(`${base}/teams/${OTHER_TEAM}/stats/open?${many}`, bearer(member))).status).toBe(403);
      expect((await timed(`${base}/teams/${TEAM}/stats/open?${many}`, bearer(member))).status).toBe(422);
    });
  });

  describe('POST /targets caps', () => {
    const post = (body: unknown) => svc.postJson('/targets', body);
    const teams = (n: number, prefix = 't') => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

    it('accepts an identifier of 2,048 characters and refuses 2,049 with 422 identifier too long', async () => {
      await json(post({ identifier: 'i'.repeat(2048), teams: [TEAM] }), 201);
      expect(await json(post({ identifier: 'i'.repeat(2049), teams: [TEAM] }), 422)).toEqual({ message: 'identifier too long' });
      // Characters, not UTF-16 units: 2,048 astral characters are 4,096 units.
      await json(post({ identifier: '🦀'.repeat(2048) }), 201);
      expect(await json(post({ identifier: '🦀'.repeat(2049) }), 422)).toEqual({ message: 'identifier too long' });
    });

    it('accepts a team of 256 characters and refuses 257 with 422 team too long', async () => {
      await json(post({ identifier: 'team-length.example.com', teams: ['x'.repeat(256)] }), 201);
      expect(await json(post({ identifier: 'team-length.example.com', teams: [TEAM, 'x'.repeat(257)] }), 422)).toEqual({
        message: 'team too long',
      });
    });

    it('accepts 100 teams in one request and refuses 101 with 422 too many teams', async () => {
      const body = await json(post({ identifier: 'hundred.example.com', teams: teams(100) }), 201);
      expect(body.target.teams).toHaveLength(100);
      expect(await json(post({ identifier: 'hundred-one.example.com', teams: teams(101) }), 422)).toEqual({ message: 'too many teams' });
      expect((await json(svc.db(`/targets?identifier=hundred-one.example.com`))).targets).toEqual([]);
    });

    it('lets a target reach 1,000 teams over several requests, and no more', async () => {
      const identifier = 'thousand.example.com';
      for (let i = 0; i < 10; i++) await json(post({ identifier, teams: teams(100, `r${i}`) }), 201);
      expect(await json(post({ identifier, teams: ['one-more'] }), 422)).toEqual({ message: 'too many teams' });
      // Teams it already has add nothing: still fine.
      const again = await json(post({ identifier, teams: ['r0-0', 'r9-99'] }), 201);
      expect(again.target.teams).toHaveLength(1000);
      const [target] = (await json(svc.db(`/targets?identifier=${identifier}&identifiermatch=true`))).targets;
      expect(target.teams).toHaveLength(1000);
      expect(target.teams).not.toContain('one-more');
    });

    it('counts the teams under the target lock: of two requests that together pass 1,000, one fails', async () => {
      const identifier = 'race.example.com';
      for (let i = 0; i < 9; i++) await json(post({ identifier, teams: teams(100, `r${i}`) }), 201);
      const answers = await Promise.all([post({ identifier, teams: teams(60, 'a') }), post({ identifier, teams: teams(60, 'b') })]);
      expect(answers.map((r) => r.status).sort()).toEqual([201, 422]);
      const [target] = (await json(svc.db(`/targets?identifier=${identifier}&identifiermatch=true`))).targets;
      expect(target.teams).toHaveLength(960);
    });

    it('checks JSON types (400) before the caps, and identifier rules before team rules', async () => {
      expect((await json(post({ identifier: 'i'.repeat(3000), teams: 'x' }), 400)).message).toContain('teams');
      expect(await json(post({ identifier: '', teams: teams(101) }), 422)).toEqual({ message: 'identifier can not be void' });
      expect(await json(post({ identifier: 'i'.repeat(2049), teams: [''] }), 422)).toEqual({ message: 'identifier too long' });
      expect(await json(post({ identifier: 'ok.example.com', teams: ['', 'x'.repeat(257)] }), 422)).toEqual({
        message: 'team can not be void',
      });
    });
  });
});
