import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Router from '@koa/router';

/**
 * GET /docs: the OpenAPI document rendered by Swagger UI (the `swagger-ui-dist` package), its files
 * served by the service from node_modules — no CDN, so the page works on a network without internet
 * access. Every script is a file of this origin, so the page runs under a Content-Security-Policy
 * without inline scripts, eval or other origins. The page is read-only ("Try it out" is off): the
 * document's servers are other ports and hosts, which that policy keeps the page from calling.
 */

const ASSET_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The renderer's files the page loads (and their source maps, which a browser's tools ask for). */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui.css.map': 'application/json',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-bundle.js.map': 'application/json',
};

/**
 * Only this origin's files: Swagger UI sets element styles from its scripts (which a policy does
 * not restrict) and needs no inline script, style element or eval (test/docs-browser.test.ts
 * records every violation).
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// Relative addresses: the page also works behind a proxy that serves the API under a path prefix.
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vulndb APIs</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head><body>
<noscript>The API reference needs JavaScript; the document itself is <a href="openapi.json">openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body></html>
`;

const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    displayOperationId: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    supportedSubmitMethods: [],
    validatorUrl: null,
  });
});
`;

const security = { 'Content-Security-Policy': DOCS_CSP, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' };

/** Adds GET /docs and GET /docs/<file> (the renderer and its start script) to `router`. */
export function addDocsPage(router: Router): void {
  router.get('/docs', (ctx) => {
    // `/docs/` would resolve the page's relative addresses under /docs/docs/: send it to /docs.
    if (ctx.originalUrl.split('?')[0]!.endsWith('/')) {
      ctx.status = 301;
      ctx.set('Location', '../docs');
      return;
    }
    ctx.set(security);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.set(security);
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = INIT;
  });
  for (const [file, type] of Object.entries(ASSETS)) {
    router.get(`/docs/${file}`, (ctx) => {
      ctx.set({ ...security, 'Cache-Control': 'public, max-age=3600' });
      ctx.type = type;
      ctx.body = fs.createReadStream(path.join(ASSET_DIR, file));
    });
  }
}
