import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import type { Context } from 'koa';

/**
 * The triage page (SPEC §15) at /ui/ on the metrics API listener: the files `npm run build:ui`
 * writes to ui/dist, a small settings document, and index.html for every other /ui/ address so
 * that each view's own address survives a reload. Served with a Content-Security-Policy that
 * allows only this service's listeners and the identity provider.
 */

export interface UiSettings {
  /** The database API's port as listening, or undefined when both APIs share this listener. */
  dbApiPort: () => number | undefined;
  dbApiAuth: boolean;
  oidc: { issuer: string; clientId: string } | undefined;
  /** The built page; default ui/dist of this checkout. */
  assetsDir?: string;
}

const DEFAULT_ASSETS = fileURLToPath(new URL('../../ui/dist/', import.meta.url));
const ASSETS: Record<string, string> = { 'app.js': 'text/javascript; charset=utf-8', 'app.css': 'text/css; charset=utf-8' };

export function uiRoutes(settings: UiSettings): Router {
  const dir = settings.assetsDir ?? DEFAULT_ASSETS;
  const router = new Router();
  const dbOrigin = (ctx: Context) => {
    const port = settings.dbApiPort();
    return port === undefined ? undefined : `${ctx.protocol}://${ctx.hostname.includes(':') ? `[${ctx.hostname}]` : ctx.hostname}:${port}`;
  };
  const secure = (ctx: Context) => {
    const connect = ["'self'", dbOrigin(ctx), settings.oidc && new URL(settings.oidc.issuer).origin].filter(Boolean).join(' ');
    ctx.set(
      'Content-Security-Policy',
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src ${connect}; ` +
        `form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
    );
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', 'no-cache');
  };
  const send = async (ctx: Context, file: string, type: string) => {
    try {
      ctx.body = await fs.readFile(path.join(dir, file));
    } catch {
      ctx.status = 503;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.body = 'The triage page is not built: run `npm run build:ui`.\n';
      return;
    }
    ctx.type = type;
    secure(ctx);
  };

  router.get('/ui/config.json', (ctx) => {
    secure(ctx);
    ctx.body = { dbApi: dbOrigin(ctx) ?? '', dbApiAuth: settings.dbApiAuth, oidc: settings.oidc ?? null };
  });
  router.get('/ui/assets/:file', async (ctx) => {
    const type = ASSETS[ctx.params.file ?? ''];
    if (!type) return; // unrouted: the API's 404
    await send(ctx, ctx.params.file!, type);
  });
  // `/ui/` arrives as `/ui` (a trailing slash is ignored, SPEC §5.1).
  router.get(['/ui', '/ui/{*rest}'], (ctx) => send(ctx, 'index.html', 'text/html; charset=utf-8'));
  return router;
}
