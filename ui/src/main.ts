import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { Api } from './api.js';
import { html } from './html.js';
import { useLoad } from './load.js';
import { follow, navigate, type Route, routeOf } from './router.js';
import { finishProviderSignIn, session } from './session.js';
import type { PageConfig } from './types.js';
import { FindingView } from './views/finding.js';
import { FindingsView } from './views/findings.js';
import { OverviewView } from './views/overview.js';
import { SignIn } from './views/signin.js';

/** The triage page (SPEC §15): sign-in, then the overview, the findings and one finding, each at its own address. */

function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(new URL(location.href)));
  useEffect(() => {
    const changed = () => setRoute(routeOf(new URL(location.href)));
    addEventListener('popstate', changed);
    return () => removeEventListener('popstate', changed);
  }, []);
  return route;
}

const signInAgain = () => {
  session.end();
  navigate(`/ui/signin?ended=1&next=${encodeURIComponent(location.pathname + location.search)}`, true);
};

function App({ config }: { config: PageConfig }) {
  const route = useRoute();
  const token = route.view === 'signin' || route.view === 'callback' ? null : session.token();
  const api = useMemo(() => (token ? new Api(config, token, signInAgain) : undefined), [config, token]);
  const [caller] = useLoad(() => (api ? api.me() : Promise.reject(new Error('signed out'))), token ?? '');

  useEffect(() => {
    if (route.view === 'callback' && config.oidc)
      finishProviderSignIn(config.oidc, route.params).then(
        (next) => navigate(next, true),
        (e: Error) => navigate(`/ui/signin?error=${encodeURIComponent(e.message)}`, true),
      );
    else if (!token && route.view !== 'signin' && route.view !== 'callback')
      navigate(`/ui/signin?next=${encodeURIComponent(location.pathname + location.search)}`, true);
  }, [route, token, config]);

  if (route.view === 'signin') return html`<${SignIn} config=${config} params=${route.params} />`;
  if (!api || route.view === 'callback' || caller.state === 'loading') return html`<p class="loading">Loading…</p>`;
  if (caller.state === 'error') return html`<p role="alert" class="error">${caller.error.message}</p>`;
  const me = caller.data;
  const signOut = () => {
    session.end();
    navigate('/ui/signin', true);
  };
  return html`<div onClick=${follow}>
    <header class="top">
      <a class="brand" href="/ui/">vulndb</a>
      <nav aria-label="Views"><a href="/ui/">Overview</a><a href="/ui/findings?status=OPEN">Findings</a></nav>
      <span class="who">${me.sub}${me.admin ? ' (admin)' : ''}</span>
      <button type="button" onClick=${signOut}>Sign out</button>
    </header>
    ${!config.dbApiAuth && html`<p class="notice" role="note">The database API of this service is open (no DB_API_AUTH): this page shows your teams only, but the API itself does not restrict readers.</p>`}
    ${route.view === 'overview' && html`<${OverviewView} api=${api} caller=${me} team=${new URL(location.href).searchParams.get('team')} />`}
    ${route.view === 'findings' && html`<${FindingsView} api=${api} caller=${me} params=${route.params} />`}
    ${route.view === 'finding' && html`<${FindingView} api=${api} id=${route.id} />`}
    ${route.view === 'unknown' && html`<main><h1>Not found</h1><p>This page has no such address.</p></main>`}
  </div>`;
}

fetch('/ui/config.json')
  .then((r) => r.json() as Promise<PageConfig>)
  .then((config) => render(html`<${App} config=${config} />`, document.getElementById('app')!));
