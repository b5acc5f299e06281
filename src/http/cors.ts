import type { Middleware } from 'koa';

/**
 * SPEC §15: the triage page, served by the metrics API listener, reads the database API on its
 * own listener, so the database API allows origins of its own host name (any port). Nothing rides
 * on ambient credentials — the page sends its bearer token explicitly — so this opens nothing a
 * script could not already do with a token of its own.
 */
export const allowSameHostOrigins: Middleware = async (ctx, next) => {
  const origin = ctx.get('Origin');
  if (!origin || !sameHost(origin, ctx.hostname)) return next();
  ctx.vary('Origin');
  ctx.set('Access-Control-Allow-Origin', origin);
  if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
    ctx.set('Access-Control-Allow-Methods', 'GET, POST');
    ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
    ctx.set('Access-Control-Max-Age', '600');
    ctx.status = 204;
    return;
  }
  ctx.set('Access-Control-Expose-Headers', 'X-Cache');
  await next();
};

function sameHost(origin: string, hostname: string): boolean {
  try {
    return new URL(origin).hostname === hostname;
  } catch {
    return false;
  }
}
