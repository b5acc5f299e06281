import { createSecretKey } from 'node:crypto';
import { Suppression } from '../src/decisions/suppression.js';
import type Router from '@koa/router';
import type Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDbApi } from '../src/app.js';
import { silentLogger } from '../src/log.js';
import { createMetricsApi } from '../src/metrics/app.js';
import { METRICS } from '../src/metrics/routes.js';
import { signJwt } from '../src/metrics/sign.js';
import { FIELD_NAMES, type FieldName, querySchema } from '../src/filters/params.js';
import { metricsErrorBodySchema } from '../src/openapi/document.js';
import { checksQueue } from '../src/queue/producer.js';
import { requestConnection } from '../src/queue/redis.js';
import { freshStore } from './support/engine.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';
import { ownedStore } from './support/owned-store.js';

/** METHOD /path with every path parameter written {x}, as the document writes them. */
const normalise = (method: string, path: string) =>
  `${method.toUpperCase()} ${path.replace(/:([A-Za-z_]+)/g, '{x}').replace(/\{[^}]+\}/g, '{x}')}`;

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
/** The operations of a path item (its other keys, such as `servers`, left out). */
const operationsOf = (item: Record<string, any>): [string, any][] => Object.entries(item).filter(([m]) => HTTP_METHODS.has(m));
const isMetrics = (path: string) => path.startsWith('/api/v1/');

const SECRET = 'openapi-test-secret-0123456789abcdef0123';
const ADMIN = () => signJwt({ sub: 'root', admin: true, exp: Math.floor(Date.now() / 1000) + 600 }, createSecretKey(Buffer.from(SECRET)));
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

/** The root router mountRoutes gave an app (its `routes()` middleware carries it). */
const rootRouter = (app: Koa) => app.middleware.map((m) => (m as unknown as { router?: Router }).router).find((r) => r !== undefined)!;
const servedBy = (app: Koa) =>
  rootRouter(app).stack.flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => normalise(m, String(layer.path))));

describe('the OpenAPI document', () => {
  let svc: TestService;
  let doc: any;
  beforeAll(async () => {
    svc = await startTestService({ worker: false, env: { JWT_SECRET: SECRET } });
    doc = await json(svc.db('/openapi.json'));
  });
  afterAll(() => svc.close());
  const metricsApi = (path: string, init: RequestInit = {}) => fetch(`${svc.metricsApiUrl}${path}`, init);

  it('is an OpenAPI 3.1 document of both APIs, saying where each listens', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBe('vulndb database and metrics APIs');
    expect(doc.info.description).toMatch(/8080/);
    expect(doc.info.description).toMatch(/8081/);
    expect(Object.keys(doc.paths).filter((p) => !isMetrics(p)).length).toBeGreaterThanOrEqual(30);
    expect(doc.servers).toEqual([expect.objectContaining({ url: 'http://{host}:{port}' })]);
    expect(doc.servers[0].variables.port.default).toBe('8080');
    for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
      if (isMetrics(path)) expect(item.servers?.[0]?.variables.port.default, path).toBe('8081');
      else expect(item.servers, path).toBeUndefined();
    }
  });

  it('documents exactly the routes both APIs serve, and routes every documented path', async () => {
    const redis = requestConnection(REDIS_URL);
    const store = await freshStore();
    const db = createDbApi({
      store,
      ...ownedStore(store),
      queue: checksQueue(redis, { queuePrefix: 'unused', keyPrefix: 'unused' }),
      log: silentLogger,
      maxReportBytes: 1024,
      pageSizeDefault: 20,
      pageSizeMax: 100,
    });
    const keys = {
      secret: createSecretKey(Buffer.from(SECRET)),
      publicKey: undefined,
      issuer: undefined,
      audience: undefined,
      secretSource: 'JWT_SECRET' as const,
    };
    const metrics = createMetricsApi({ store, suppression: new Suppression(store), log: silentLogger, keys });
    const served = new Set([...servedBy(db), ...servedBy(metrics)]);
    served.delete('GET /openapi.json');
    // The page that renders the document and its files (src/openapi/docs-page.ts).
    for (const route of served) if (route === 'GET /docs' || route.startsWith('GET /docs/')) served.delete(route);
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      operationsOf(item).map(([m]) => normalise(m, path)),
    );
    expect(documented.filter((o) => o.includes('/api/v1/') && o.includes('/stats/')).length).toBe(2 * METRICS.length);
    expect([...documented].sort()).toEqual([...served].sort());
    redis.disconnect();
  });

  /**
   * Each GET operation of the database API, probed with every parameter the API knows: a parameter
   * the route validates answers 400 for a malformed value, and a team filter outside a scoped
   * caller's teams answers 403; a parameter the route does not read changes nothing. The document
   * must list exactly the parameters that answer so. (identifier, identifiers and labels take any
   * text: no request tells whether a route reads them on an empty store.)
   */
  it('documents for each database API operation exactly the query parameters its route accepts', async () => {
    const scoped = await startTestService({ worker: false, env: { JWT_SECRET: SECRET, DB_API_AUTH: 'jwt' } });
    try {
      const token = signJwt(
        { sub: 'probe', teams: ['team-a'], exp: Math.floor(Date.now() / 1000) + 600 },
        createSecretKey(Buffer.from(SECRET)),
      );
      const malformed = (name: FieldName) => !querySchema([name]).safeParse({ [name]: 'x' }).success;
      const probes: [FieldName, string, number][] = [
        ...FIELD_NAMES.filter(malformed).map((name): [FieldName, string, number] => [name, 'x', 400]),
        ['team', 'team-b', 403],
        ['teams', 'team-b', 403],
      ];
      const gets = Object.entries(doc.paths as Record<string, any>).filter(([path, item]) => item.get && !isMetrics(path));
      expect(gets.length).toBeGreaterThanOrEqual(30);
      let refused = 0;
      for (const [path, item] of gets) {
        const documented = new Set<string>(item.get.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name));
        const url = path.replace(/\{[^}]+\}/g, UNKNOWN);
        const answers = await Promise.all(
          probes.map(async ([name, value, status]) => {
            const res = await scoped.db(`${url}?${name}=${value}`, { headers: { Authorization: `Bearer ${token}` } });
            await res.arrayBuffer();
            return res.status === status ? [name] : [];
          }),
        );
        const accepted = new Set<string>(answers.flat());
        refused += accepted.size;
        const probed = (names: Set<string>) => [...names].filter((n) => probes.some(([p]) => p === n)).sort();
        expect(probed(accepted), path).toEqual(probed(documented));
      }
      // The probes do refuse requests: most operations validate some parameter.
      expect(refused).toBeGreaterThan(50);
    } finally {
      await scoped.close();
    }
    // Several hundred requests on a busy machine.
  }, 180_000);

  it('takes query parameters from the validation schemas (patterns and enums included)', () => {
    const params = Object.fromEntries(doc.paths['/findings'].get.parameters.map((p: any) => [p.name, p.schema]));
    expect(params.status.enum).toEqual(['OPEN', 'FIXED']);
    expect(params.minScore.pattern).toBe('^-?\\d+(\\.\\d+)?$');
    expect(params.page.pattern).toBe('^\\d+$');
  });

  it('describes response bodies with their fields and error bodies', () => {
    const finding = doc.paths['/findings/{finding_id}'].get.responses['200'].content['application/json'].schema.properties.finding;
    expect(finding.required).toEqual(expect.arrayContaining(['id', 'status', 'total_exposure', 'issue', 'target', 'teams', 'source']));
    expect(finding.required).not.toContain('current_exposure');
    expect(doc.components.schemas.Error.properties.message.type).toBe('string');
    expect(doc.paths['/targets'].post.responses['422']).toBeDefined();
  });

  it('documents X-Cache on exactly the GET operations that answer with it', async () => {
    const gets = Object.entries(doc.paths as Record<string, Record<string, any>>).filter(([path, ops]) => ops.get && !isMetrics(path));
    const documented: string[] = [];
    const answered: string[] = [];
    for (const [path, ops] of gets) {
      const header = ops.get.responses['200'].headers?.['X-Cache'];
      if (header) {
        expect(header.schema.enum).toEqual(['HIT', 'MISS', 'BYPASS']);
        documented.push(path);
      }
      // Unknown parents answer 200 with an empty list or 404; either way the header tells.
      const res = await svc.db(path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000'));
      await res.arrayBuffer();
      if (res.headers.get('x-cache') !== null) answered.push(path);
    }
    expect(documented).toEqual([
      '/findings',
      '/sources/{source_id}/findings',
      '/issues/{issue_id}/findings',
      '/targets/{target_id}/findings',
    ]);
    expect(answered).toEqual(documented);
  });

  it('gives the metrics API the bearer requirement, its parameter lists and its error body', async () => {
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(doc.components.schemas.MetricsError).toMatchObject({
      type: 'object',
      required: ['code', 'error', 'type'],
      properties: { code: { type: 'integer' }, error: { type: 'string' }, type: { type: 'string' } },
    });
    expect(doc.paths['/api/v1/healthcheck'].get.security).toEqual([]);
    // Every operation but the health check needs a token; the metrics' own checks below (webhooks and decisions are not metrics).
    for (const [path, item] of Object.entries(doc.paths as Record<string, any>).filter(
      ([p]) => isMetrics(p) && p !== '/api/v1/healthcheck',
    )) {
      for (const [method, op] of Object.entries(item).filter(([m]) => m !== 'servers'))
        expect((op as any).security, `${method} ${path}`).toEqual([{ bearer: [] }]);
    }
    const ops = Object.entries(doc.paths as Record<string, any>).filter(([path]) => isMetrics(path) && path.includes('/stats/'));
    for (const [path, item] of ops) {
      const op = item.get;
      expect(op.security, path).toEqual([{ bearer: [] }]);
      for (const status of ['401', '403', '422', '500']) {
        expect(op.responses[status]?.content['application/json'].schema, `${path} ${status}`).toEqual({
          $ref: '#/components/schemas/MetricsError',
        });
      }
      expect(op.responses['200'].headers['X-Cache'].schema.enum).toEqual(['HIT', 'MISS', 'BYPASS']);
    }
    // The query parameters are the ones each route parses (src/metrics/routes.ts), plus teams globally.
    for (const metric of METRICS) {
      const names = (path: string) => doc.paths[path].get.parameters.map((p: any) => `${p.in}:${p.name}`);
      const query = metric.params.map((p) => `query:${p}`);
      expect(names(`/api/v1/teams/{team_id}/${metric.path}`)).toEqual(['path:team_id', ...query]);
      expect(names(`/api/v1/${metric.path}`)).toEqual([...query, 'query:teams']);
      const body = doc.paths[`/api/v1/${metric.path}`].get.responses['200'].content['application/json'].schema;
      expect(Object.keys(body.properties)).toEqual([metric.key]);
    }
    expect(doc.components.responses.MetricsMethodNotAllowed.headers.Allow).toBeDefined();

    // The bodies the metrics API answers fit the documented schema.
    const refused = await metricsApi('/api/v1/stats/open');
    expect(refused.status).toBe(401);
    expect(metricsErrorBodySchema.parse(await refused.json())).toMatchObject({ code: 401, type: 'Unauthorized' });
    const invalid = await metricsApi('/api/v1/teams/not-a-uuid/stats/open', { headers: { Authorization: `Bearer ${ADMIN()}` } });
    expect(metricsErrorBodySchema.parse(await invalid.json())).toEqual({ code: 422, error: 'ID is malformed', type: 'Validation' });
    const ok = await metricsApi(`/api/v1/teams/${UNKNOWN}/stats/open`, { headers: { Authorization: `Bearer ${ADMIN()}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-cache')).not.toBeNull();
    await ok.arrayBuffer();
  });

  it('answers 405 with Allow listing the methods of the path, on both APIs', async () => {
    const allowOf = (res: Response) => res.headers.get('allow')?.split(/,\s*/).sort();
    for (const [method, path, allow] of [
      ['DELETE', '/findings', ['GET', 'HEAD']],
      ['PUT', '/findings/', ['GET', 'HEAD']],
      ['PROPFIND', `/findings/${UNKNOWN}`, ['GET', 'HEAD']],
      ['GET', '/checks', ['POST']],
      ['DELETE', '/targets', ['GET', 'HEAD', 'POST']],
    ] as const) {
      const res = await svc.db(path, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(allowOf(res), `${method} ${path}`).toEqual(allow);
      expect(await res.json()).toEqual({ message: 'Method Not Allowed' });
    }
    for (const [method, path, token] of [
      ['POST', '/api/v1/stats/open', undefined],
      ['DELETE', `/api/v1/teams/${UNKNOWN}/stats/exposure/current`, ADMIN()],
      ['PUT', '/api/v1/healthcheck/', undefined],
    ] as const) {
      const res = await metricsApi(path, { method, ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}) });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(allowOf(res), `${method} ${path}`).toEqual(['GET', 'HEAD']);
      expect(metricsErrorBodySchema.parse(await res.json())).toEqual({
        code: 405,
        error: 'Method Not Allowed',
        type: 'Method Not Allowed',
      });
    }
    // Unknown paths stay 404 without Allow; OPTIONS keeps the framework's answer.
    const unknown = await svc.db('/nowhere', { method: 'DELETE' });
    expect([unknown.status, unknown.headers.get('allow')]).toEqual([404, null]);
    await unknown.arrayBuffer();
    const options = await svc.db('/targets', { method: 'OPTIONS' });
    expect(options.status).toBe(200);
    expect(allowOf(options)).toEqual(['GET', 'HEAD', 'POST']);
  });

  it('describes the /checks body as the code accepts it: FINISHED reports in full, other statuses as any object', async () => {
    const op = doc.paths['/checks'].post;
    expect(op.responses['202']).toBeDefined();
    const [finished, other, ...rest] = op.requestBody.content['application/json'].schema.oneOf;
    expect(rest).toEqual([]);
    expect(finished.properties.status).toEqual({ type: 'string', const: 'FINISHED' });
    expect(finished.required).toEqual(expect.arrayContaining(['status', 'check_id', 'checktype_name', 'target']));
    expect(other.properties.status).toEqual({ type: 'string', not: { const: 'FINISHED' } });
    expect(other.required).toEqual(['status']);
    // zod reads JSON Schema but not `not`: the other branch's `not` (checked above) is applied by hand.
    const finishedSchema = z.fromJSONSchema(finished);
    const otherSchema = z.fromJSONSchema({ ...other, properties: { status: { type: 'string' } } });
    const branches = (body: any) => [
      finishedSchema.safeParse(body).success,
      otherSchema.safeParse(body).success && body.status !== 'FINISHED',
    ];
    const report = {
      status: 'FINISHED',
      check_id: 'c1',
      checktype_name: 'vulcan-tls',
      target: 'www.example.com',
      end_time: '2024-01-05 10:00:00',
    };
    expect(branches({ status: 'RUNNING', progress: 0.5, target: 42 })).toEqual([false, true]);
    expect(branches({ status: 'finished' })).toEqual([false, true]);
    expect(branches(report)).toEqual([true, false]);
    expect(branches({ status: 'FINISHED' })).toEqual([false, false]);
    expect(branches({ status: 3 })).toEqual([false, false]);
    // And the service agrees.
    const running = await svc.postJson('/checks', { status: 'RUNNING', progress: 0.5, target: 42 });
    expect(running.status).toBe(202);
    await running.arrayBuffer();
    const incomplete = await svc.postJson('/checks', { status: 'FINISHED' });
    expect(incomplete.status).toBe(400);
    await incomplete.arrayBuffer();
  });

  it('serves a page that renders the document with files of its own origin (rendered in test/docs-browser.test.ts)', async () => {
    const res = await svc.db('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const page = await res.text();
    const files = [...page.matchAll(/(?:src|href)="(docs\/[^"]+)"/g)].map((m) => m[1]!);
    expect(files).toEqual(['docs/swagger-ui.css', 'docs/swagger-ui-bundle.js', 'docs/init.js']);
    for (const file of files) {
      const asset = await svc.db(`/${file}`);
      expect(asset.status, file).toBe(200);
      expect((await asset.text()).length, file).toBeGreaterThan(100);
    }
    expect((await svc.db('/docs/package.json')).status).toBe(404);
  });
});
