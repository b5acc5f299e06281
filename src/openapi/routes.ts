import Router from '@koa/router';
import type { PageLimits } from '../filters/params.js';
import { addDocsPage } from './docs-page.js';
import { openApiDocument } from './document.js';

/** GET /openapi.json of both APIs (generated once per process) and GET /docs, a page that renders it (docs-page.ts). */
export function docsRoutes(limits: PageLimits): Router {
  const router = new Router();
  let document: string | undefined;
  router.get('/openapi.json', (ctx) => {
    document ??= JSON.stringify(openApiDocument(limits));
    ctx.type = 'application/json';
    ctx.body = document;
  });
  addDocsPage(router);
  return router;
}
