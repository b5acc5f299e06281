import { type Api, query } from '../api.js';
import { instant, label, SCORE_BOUNDS, severityOf } from '../format.js';
import { html } from '../html.js';
import { useLoad } from '../load.js';
import { navigate } from '../router.js';
import { type Caller, type FindingList, SEVERITIES, type Severity } from '../types.js';

/** The findings table: the filters of SPEC §5.5 a person needs, sorting and the API's pages. */

const PAGE_SIZE = 20;
const FILTERS = ['team', 'status', 'severity', 'sla', 'decision', 'identifier', 'summary', 'sortBy', 'page'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

const filtersOf = (params: URLSearchParams): Filters =>
  Object.fromEntries(FILTERS.flatMap((k) => (params.get(k) ? [[k, params.get(k)!]] : [])));

/** The database API's query for the page's filters, within the caller's scope. */
function listQuery(f: Filters, caller: Caller): string {
  const scope = f.team ? { team: f.team } : caller.admin ? {} : { teams: caller.teams.join(',') };
  return query({
    ...scope,
    status: f.status,
    sla: f.sla,
    decision: f.decision,
    identifier: f.identifier,
    summary: f.summary,
    ...(f.severity ? SCORE_BOUNDS[f.severity as Severity] : {}),
    sortBy: f.sortBy ?? '-score',
    page: f.page ?? '1',
    size: PAGE_SIZE,
  });
}

export function FindingsView({ api, caller, params }: { api: Api; caller: Caller; params: URLSearchParams }) {
  const f = filtersOf(params);
  const q = listQuery(f, caller);
  const [loaded] = useLoad(() => api.db<FindingList>(`/findings${q}`), q);
  const go = (changes: Filters) => navigate(`/ui/findings${query({ ...f, page: undefined, ...changes })}`);
  const select = (name: keyof Filters, text: string, options: [string, string][]) => html`<label>
      ${text}
      <select name=${name} value=${f[name] ?? options[0]![0]} onChange=${(e: Event) => go({ [name]: (e.target as HTMLSelectElement).value })}>
        ${options.map(([v, t]) => html`<option value=${v}>${t}</option>`)}
      </select></label>`;
  const teams: [string, string][] = caller.admin && !f.team ? [] : caller.teams.map((t) => [t, t]);
  return html`<main>
    <h1>Findings</h1>
    <form class="filters" role="search" onSubmit=${(e: Event) => {
      e.preventDefault();
      const form = new FormData(e.target as HTMLFormElement);
      go({ identifier: String(form.get('identifier') ?? ''), summary: String(form.get('summary') ?? '') });
    }}>
      ${select('team', 'Team', [['', caller.admin ? 'every team' : 'all my teams'], ...teams])}
      ${select('status', 'Status', [
        ['', 'any'],
        ['OPEN', 'open'],
        ['FIXED', 'fixed'],
      ])}
      ${select('severity', 'Severity', [['', 'any'], ...SEVERITIES.map((s): [string, string] => [s, s])])}
      ${select('sla', 'SLA', [
        ['', 'any'],
        ['breached', 'breached'],
        ['within', 'within'],
      ])}
      ${select('decision', 'Decision', [
        ['', 'any or none'],
        ['none', 'none'],
        ['any', 'any decision'],
        ['false_positive', 'false positive'],
        ['accepted_risk', 'accepted risk'],
      ])}
      ${select('sortBy', 'Sort', [
        ['-score', 'highest score first'],
        ['score', 'lowest score first'],
      ])}
      <label>Target contains <input name="identifier" type="search" value=${f.identifier ?? ''} /></label>
      <label>Issue contains <input name="summary" type="search" value=${f.summary ?? ''} /></label>
      <button type="submit">Apply</button>
    </form>
    ${loaded.state === 'loading' && html`<p class="loading">Loading…</p>`}
    ${loaded.state === 'error' && html`<p role="alert" class="error">${loaded.error.message}</p>`}
    ${loaded.state === 'done' && html`<${Table} list=${loaded.data} page=${Number(f.page ?? '1')} go=${go} />`}
  </main>`;
}

function Table({ list, page, go }: { list: FindingList; page: number; go: (f: Filters) => void }) {
  const total = list.pagination.total;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  if (total === 0) return html`<p data-testid="count">No finding matches.</p>`;
  return html`<p data-testid="count">${total} finding${total === 1 ? '' : 's'}</p>
    <div class="scroll"><table class="findings">
      <thead><tr><th scope="col">Severity</th><th scope="col">Issue</th><th scope="col">Target</th><th scope="col">Status</th><th scope="col">SLA due</th><th scope="col">Decision</th></tr></thead>
      <tbody>${list.findings.map((x) => {
        const sev = severityOf(x.score);
        const breached = x.sla_due !== null && Date.parse(x.sla_due) <= Date.now();
        return html`<tr>
          <td><span class=${`sev sev-${sev}`}>${label(sev)}</span> ${x.score}</td>
          <td><a href=${`/ui/findings/${x.id}`}>${x.issue.summary}</a></td>
          <td>${x.target.identifier}</td>
          <td>${x.status}</td>
          <td class=${breached ? 'breached' : ''}>${instant(x.sla_due)}${breached ? ' (breached)' : ''}</td>
          <td>${x.decision ? label(x.decision.decision) : '—'}</td>
        </tr>`;
      })}</tbody>
    </table></div>
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled=${page <= 1} onClick=${() => go({ page: String(page - 1) })}>Previous</button>
      <span>page ${page} of ${pages}</span>
      <button type="button" disabled=${page >= pages} onClick=${() => go({ page: String(page + 1) })}>Next</button>
    </nav>`;
}
