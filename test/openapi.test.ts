import type Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbApi } from '../src/app.js';
import { silentLogger } from '../src/log.js';
import { checksQueue } from '../src/queue/producer.js';
import { requestConnection } from '../src/queue/redis.js';
import { freshStore } from './support/engine.js';
import { ProcessLocks } from '../src/ingest/target-locks.js';
import { json, REDIS_URL, startTestService, type TestService } from './support/service.js';

/** METHOD /path with every path parameter written {x}, as the document writes them. */
const normalise = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/:([A-Za-z_]+)/g, '{x}').replace(/\{[^}]+\}/g, '{x}')}`;

describe('the OpenAPI document', () => {
  let svc: TestService;
  let doc: any;
  beforeAll(async () => {
    svc = await startTestService({ worker: false });
    doc = await json(svc.db('/openapi.json'));
  });
  afterAll(() => svc.close());

  it('is an OpenAPI 3.1 document of the database API', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBe('vulndb database API');
    expect(Object.keys(doc.paths).length).toBeGreaterThanOrEqual(30);
  });

  it('documents exactly the routes the API serves', async () => {
    const redis = requestConnection(REDIS_URL);
    const app = createDbApi({
      store: await freshStore(),
      locks: new ProcessLocks(),
      queue: checksQueue(redis, { queuePrefix: 'unused', keyPrefix: 'unused' }),
      log: silentLogger,
      maxReportBytes: 1024,
      pageSizeDefault: 20,
      pageSizeMax: 100,
    });
    const root = app.middleware.map((m) => (m as unknown as { router?: Router }).router).find((r) => r !== undefined)!;
    const served = new Set(
      root.stack.flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => normalise(m, String(layer.path)))),
    );
    served.delete('GET /openapi.json');
    served.delete('GET /docs');
    const documented = new Set(
      Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => normalise(m, path))),
    );
    expect([...documented].sort()).toEqual([...served].sort());
    redis.disconnect();
  });

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
    const gets = Object.entries(doc.paths as Record<string, Record<string, any>>).filter(([, ops]) => ops.get);
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
    expect(documented).toEqual(['/findings', '/sources/{source_id}/findings', '/issues/{issue_id}/findings', '/targets/{target_id}/findings']);
    expect(answered).toEqual(documented);
  });

  it('serves a readable page that renders the document', async () => {
    const res = await svc.db('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(await res.text()).toContain("fetch('openapi.json')");
  });
});
