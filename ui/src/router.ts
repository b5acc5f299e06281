/**
 * Addresses of the page's views (SPEC §15: every view has its own address, filters in the query
 * string): /ui/ overview, /ui/findings?…, /ui/findings/{id}, /ui/signin, /ui/callback.
 */

export type Route =
  | { view: 'overview' }
  | { view: 'findings'; params: URLSearchParams }
  | { view: 'finding'; id: string }
  | { view: 'signin'; params: URLSearchParams }
  | { view: 'callback'; params: URLSearchParams }
  | { view: 'unknown' };

export function routeOf(url: URL): Route {
  const path = url.pathname.replace(/\/+$/, '');
  if (path === '/ui') return { view: 'overview' };
  if (path === '/ui/findings') return { view: 'findings', params: url.searchParams };
  const finding = /^\/ui\/findings\/([^/]+)$/.exec(path);
  if (finding) return { view: 'finding', id: decodeURIComponent(finding[1]!) };
  if (path === '/ui/signin') return { view: 'signin', params: url.searchParams };
  if (path === '/ui/callback') return { view: 'callback', params: url.searchParams };
  return { view: 'unknown' };
}

/** Goes to an address of the page without reloading it. */
export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** Click handler of in-page links: plain clicks stay in the page, others (new tab…) do what browsers do. */
export function follow(e: MouseEvent): void {
  const a = (e.target as Element).closest('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/ui')) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
}
