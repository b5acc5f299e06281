import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { type Api, query } from '../api.js';
import { day, days, label, percent } from '../format.js';
import { html } from '../html.js';
import { useLoad } from '../load.js';
import { type Caller, type MttrStats, type OpenStats, type SeriesStats, SEVERITIES, type SlaStats } from '../types.js';

/** Open findings by severity, breached SLAs, compliance, MTTR and 90 days of open findings, for the caller's scope. */

const WEEKS = 13;
const COLORS = { critical: '#a4001d', high: '#d94f00', medium: '#a07000', low: '#2f6db5', informational: '#5b6670' } as const;

export interface Scope {
  /** `teams=` of the metrics API; undefined: the organisation (admins). */
  teams: string | undefined;
  /** The one team of a scope of one: its own metric paths, which read the team's copy of its findings. */
  team: string | undefined;
  title: string;
}

export function scopeOf(caller: Caller, team: string | null): Scope {
  if (team) return { teams: team, team, title: `Team ${team}` };
  if (caller.admin) return { teams: undefined, team: undefined, title: 'The organisation' };
  const one = caller.teams.length === 1 ? caller.teams[0] : undefined;
  return {
    teams: caller.teams.join(','),
    team: one,
    title: one ? `Team ${one}` : `Your ${caller.teams.length} teams`,
  };
}

/** A metric of the scope: the team's path for one team, else the global one over `teams=`. */
const metricPath = (scope: Scope, path: string, params: Record<string, string> = {}) =>
  scope.team ? `/teams/${encodeURIComponent(scope.team)}/${path}${query(params)}` : `/${path}${query({ teams: scope.teams, ...params })}`;

type Series = SeriesStats['open_issues_series'];

/** The chart's weekly days before today (13 of them: 90 days), oldest first. */
function chartDays(now: number): string[] {
  return Array.from({ length: WEEKS }, (_, i) => day(now - (WEEKS - i) * 7 * 86_400_000));
}

/** What is not there yet: a placeholder that says so (aria-busy) and keeps its place. */
const pending = html`<span class="pending" aria-busy="true">…</span>`;

/**
 * Each part of the overview asks for its own answer and shows as soon as it has it: the figures
 * first, the chart (the costliest answer, one request for its 13 points) when it arrives.
 */
export function OverviewView({ api, caller, team }: { api: Api; caller: Caller; team: string | null }) {
  const scope = scopeOf(caller, team);
  const key = `${scope.team ?? ''}|${scope.teams ?? '*'}`;
  const [openLoaded] = useLoad(() => api.metrics<OpenStats>(metricPath(scope, 'stats/open')), key);
  const [slaLoaded] = useLoad(() => api.metrics<SlaStats>(metricPath(scope, 'stats/sla')), key);
  // No fixed finding yet: the API's 404, shown as no figure.
  const [mttrLoaded] = useLoad(() => api.metrics<MttrStats>(metricPath(scope, 'stats/mttr')).catch(() => null), key);
  const [seriesLoaded] = useLoad(
    () => api.metrics<SeriesStats>(metricPath(scope, 'stats/open/series', { atDates: chartDays(Date.now()).join(',') })),
    key,
  );
  if (!caller.admin && caller.teams.length === 0)
    return html`<main><h1>Overview</h1><p>Your token names no team: there is nothing to show.</p></main>`;
  const failed = [openLoaded, slaLoaded, seriesLoaded].find((l) => l.state === 'error');
  const open = openLoaded.state === 'done' ? openLoaded.data.open_issues : undefined;
  const sla = slaLoaded.state === 'done' ? slaLoaded.data.sla : undefined;
  const mttr = mttrLoaded.state === 'done' ? (mttrLoaded.data?.mttr ?? null) : undefined;
  const series = seriesLoaded.state === 'done' ? seriesLoaded.data.open_issues_series : undefined;
  const list = (extra: Record<string, string>) => `/ui/findings${query({ ...(team ? { team } : {}), status: 'OPEN', ...extra })}`;
  const mttrText = (hours: number | undefined) => (mttr === undefined ? pending : mttr && hours !== undefined ? days(hours) : '—');
  return html`<main>
    <h1>Overview <small>${scope.title}</small></h1>
    ${failed?.state === 'error' && html`<p role="alert" class="error">${failed.error.message}</p>`}
    <section class="cards" aria-label="Summary">
      <div class="card"><h2>Open findings</h2><p class="big">${open ? html`<span data-testid="open-total">${SEVERITIES.reduce((n, s) => n + open[s], 0)}</span>` : pending}</p></div>
      <div class="card"><h2>Breached SLA</h2><p class="big">${sla ? html`<a data-testid="breached-total" href=${list({ sla: 'breached' })}>${sla.breached.total}</a>` : pending}</p></div>
      <div class="card"><h2>SLA compliance</h2><p class="big">${sla ? percent(sla.compliance.total) : pending}</p><p class="help">fixed within deadline, so far</p></div>
      <div class="card"><h2>MTTR</h2><p class="big">${mttrText(mttr?.total)}</p><p class="help">mean time to remediate</p></div>
    </section>
    <div class="scroll"><table class="by-severity">
      <caption>By severity</caption>
      <thead><tr><th scope="col">Severity</th><th scope="col">Open</th><th scope="col">Breached</th><th scope="col">SLA (days)</th><th scope="col">Compliance</th><th scope="col">MTTR</th></tr></thead>
      <tbody>${SEVERITIES.map(
        (s) => html`<tr>
          <th scope="row"><span class=${`sev sev-${s}`}>${label(s)}</span></th>
          <td>${open ? html`<a href=${list({ severity: s })}>${open[s]}</a>` : pending}</td>
          <td>${sla ? html`<a data-testid=${`breached-${s}`} href=${list({ severity: s, sla: 'breached' })}>${sla.breached[s]}</a>` : pending}</td>
          <td>${sla ? (sla.policy_days[s] ?? '—') : pending}</td>
          <td>${sla ? percent(sla.compliance[s]) : pending}</td>
          <td>${mttrText(mttr?.[s])}</td>
        </tr>`,
      )}</tbody>
    </table></div>
    <section aria-label="Open findings over 90 days"><h2>Open findings, last 90 days</h2>
      ${series ? html`<${Chart} series=${series} now=${open} />` : html`<div class="chart chart-pending" aria-busy="true">Loading the chart…</div>`}
    </section>
  </main>`;
}

function Chart({ series, now }: { series: Series; now: OpenStats['open_issues'] | undefined }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!el.current) return;
    // The weekly points, and today's from the current figures once they are there.
    const points = [
      ...series.map((p) => ({ at: Date.parse(`${p.date}T00:00:00Z`) / 1000, open: p.open_issues })),
      ...(now ? [{ at: Date.now() / 1000, open: now }] : []),
    ];
    const width = Math.max(300, Math.min(el.current.clientWidth, 1100));
    const plot = new uPlot(
      {
        width,
        height: 260,
        series: [{}, ...SEVERITIES.map((s) => ({ label: label(s), stroke: COLORS[s], width: 2 }))],
        axes: [{}, { size: 50 }],
      },
      [points.map((p) => p.at), ...SEVERITIES.map((s) => points.map((p) => p.open[s]))],
      el.current,
    );
    return () => plot.destroy();
  }, [series, now]);
  return html`<div class="chart" ref=${el} role="img" aria-label="Open findings by severity, weekly, over the last 90 days"></div>`;
}
