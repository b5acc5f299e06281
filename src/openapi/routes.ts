import Router from '@koa/router';
import type { PageLimits } from '../filters/params.js';
import { openApiDocument } from './document.js';

/** GET /openapi.json of both APIs (generated once per process) and GET /docs, a page that renders it. */
export function docsRoutes(limits: PageLimits): Router {
  const router = new Router();
  let document: string | undefined;
  router.get('/openapi.json', (ctx) => {
    document ??= JSON.stringify(openApiDocument(limits));
    ctx.type = 'application/json';
    ctx.body = document;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_PAGE;
  });
  return router;
}

// Self-contained (no CDN): it must work on a network without internet access.
const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vulndb APIs</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1000px;padding:1rem 2rem;color:#1d1d1f}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd;text-transform:capitalize}
details{border:1px solid #e3e3e3;border-radius:6px;margin:.4rem 0;padding:.3rem .7rem}
summary{cursor:pointer}code{font-size:13px}.m{display:inline-block;width:3.2rem;font-weight:600;color:#0a6}
.m.post{color:#b60}table{border-collapse:collapse;margin:.5rem 0}td,th{border-bottom:1px solid #eee;padding:.2rem .6rem;text-align:left;vertical-align:top}
pre{background:#f6f6f6;padding:.6rem;overflow:auto;font-size:12px;max-height:24rem}
</style></head><body>
<h1>vulndb database and metrics APIs</h1><p id="intro">Loading <a href="openapi.json">openapi.json</a>…</p><div id="ops"></div>
<script>
const esc = (s) => String(s ?? '').replace(/[&<>"]/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
fetch('openapi.json').then((r) => r.json()).then((doc) => {
  document.getElementById('intro').innerHTML = esc(doc.info.description) + ' Document: <a href="openapi.json">openapi.json</a> (OpenAPI ' + esc(doc.openapi) + ').';
  const byTag = {};
  const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) if (METHODS.includes(method)) (byTag[op.tags[0]] ??= []).push({ path, method, op });
  let html = '';
  for (const [tag, ops] of Object.entries(byTag)) {
    html += '<h2>' + esc(tag) + '</h2>';
    for (const { path, method, op } of ops) {
      const params = (op.parameters || []).map((p) => '<tr><td><code>' + esc(p.name) + '</code></td><td>' + esc(p.in) + '</td><td><code>' + esc(p.schema.type || '') + (p.schema.pattern ? ' ' + esc(p.schema.pattern) : '') + (p.schema.enum ? ' ' + esc(p.schema.enum.join(' | ')) : '') + '</code></td><td>' + esc(p.description || '') + '</td></tr>').join('');
      const ok = Object.entries(op.responses).find(([s]) => s.startsWith('2'));
      const errors = Object.entries(op.responses).filter(([s]) => !s.startsWith('2')).map(([s, r]) => s + ' ' + esc(r.description)).join('; ');
      html += '<details><summary><span class="m ' + method + '">' + method.toUpperCase() + '</span><code>' + esc(path) + '</code> — ' + esc(op.summary) + '</summary>'
        + (params ? '<table><tr><th>parameter</th><th>in</th><th>schema</th><th>meaning</th></tr>' + params + '</table>' : '')
        + (op.requestBody ? '<p>Body:</p><pre>' + esc(JSON.stringify(op.requestBody.content['application/json'].schema, null, 2)) + '</pre>' : '')
        + '<p>' + esc(ok[0]) + ': ' + esc(ok[1].description) + '</p><pre>' + esc(JSON.stringify(ok[1].content['application/json'].schema, null, 2)) + '</pre>'
        + '<p>Errors: ' + errors + '</p></details>';
    }
  }
  document.getElementById('ops').innerHTML = html;
});
</script></body></html>`;
