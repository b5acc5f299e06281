import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { type Api, query } from '../api.js';
import { day, days, label, percent } from '../format.js';
import { html } from '../html.js';
import { useLoad } from '../load.js';
import { type Caller, type MttrStats, type OpenStats, SEVERITIES, type SlaStats } from '../types.js';

/** Open findings by severity, breached SLAs, compliance, MTTR and 90 days of open findings, for the caller's scope. */

const WEEKS = 13;
const COLORS = { critical: '#a4001d', high: '#d94f00', medium: '#a07000', low: '#2f6db5', informational: '#5b6670' } as const;

export interface Scope {
  /** `teams=` of the metrics API; undefined: the organisation (admins). */
  teams: string | undefined;
  title: string;
}

export function scopeOf(caller: Caller, team: string | null): Scope {
  if (team) return { teams: team, title: `Team ${team}` };
  if (caller.admin) return { teams: undefined, title: 'The organisation' };
  return {
    teams: caller.teams.join(','),
    title: caller.teams.length === 1 ? `Team ${caller.teams[0]}` : `Your ${caller.teams.length} teams`,
  };
}

interface Overview {
  open: OpenStats['open_issues'];
  sla: SlaStats['sla'];
  mttr: MttrStats['mttr'] | null;
  series: { at: number; open: OpenStats['open_issues'] }[];
}

async function loadOverview(api: Api, teams: string | undefined): Promise<Overview> {
  const now = Date.now();
  const weeks = Array.from({ length: WEEKS }, (_, i) => day(now - (WEEKS - i) * 7 * 86_400_000));
  const [open, sla, mttr, ...series] = await Promise.all([
    api.metrics<OpenStats>(`/stats/open${query({ teams })}`),
    api.metrics<SlaStats>(`/stats/sla${query({ teams })}`),
    api.metrics<MttrStats>(`/stats/mttr${query({ teams })}`).catch(() => null),
    ...weeks.map((d) => api.metrics<OpenStats>(`/stats/open${query({ teams, atDate: d })}`)),
  ]);
  return {
    open: open.open_issues,
    sla: sla.sla,
    mttr: mttr?.mttr ?? null,
    series: [
      ...series.map((s, i) => ({ at: Date.parse(`${weeks[i]}T00:00:00Z`) / 1000, open: s.open_issues })),
      { at: now / 1000, open: open.open_issues },
    ],
  };
}

export function OverviewView({ api, caller, team }: { api: Api; caller: Caller; team: string | null }) {
  const scope = scopeOf(caller, team);
  const [loaded] = useLoad(() => loadOverview(api, scope.teams), scope.teams ?? '*');
  if (!caller.admin && caller.teams.length === 0)
    return html`<main><h1>Overview</h1><p>Your token names no team: there is nothing to show.</p></main>`;
  if (loaded.state === 'loading') return html`<main><h1>Overview</h1><p class="loading">Loading…</p></main>`;
  if (loaded.state === 'error') return html`<main><h1>Overview</h1><p role="alert" class="error">${loaded.error.message}</p></main>`;
  const { open, sla, mttr, series } = loaded.data;
  const list = (extra: Record<string, string>) => `/ui/findings${query({ ...(team ? { team } : {}), status: 'OPEN', ...extra })}`;
  return html`<main>
    <h1>Overview <small>${scope.title}</small></h1>
    <section class="cards" aria-label="Summary">
      <div class="card"><h2>Open findings</h2><p class="big" data-testid="open-total">${SEVERITIES.reduce((n, s) => n + open[s], 0)}</p></div>
      <div class="card"><h2>Breached SLA</h2><p class="big" data-testid="breached-total"><a href=${list({ sla: 'breached' })}>${sla.breached.total}</a></p></div>
      <div class="card"><h2>SLA compliance</h2><p class="big">${percent(sla.compliance.total)}</p><p class="help">fixed within deadline, so far</p></div>
      <div class="card"><h2>MTTR</h2><p class="big">${mttr ? days(mttr.total) : '—'}</p><p class="help">mean time to remediate</p></div>
    </section>
    <div class="scroll"><table class="by-severity">
      <caption>By severity</caption>
      <thead><tr><th scope="col">Severity</th><th scope="col">Open</th><th scope="col">Breached</th><th scope="col">SLA (days)</th><th scope="col">Compliance</th><th scope="col">MTTR</th></tr></thead>
      <tbody>${SEVERITIES.map(
        (s) => html`<tr>
          <th scope="row"><span class=${`sev sev-${s}`}>${label(s)}</span></th>
          <td><a href=${list({ severity: s })}>${open[s]}</a></td>
          <td data-testid=${`breached-${s}`}><a href=${list({ severity: s, sla: 'breached' })}>${sla.breached[s]}</a></td>
          <td>${sla.policy_days[s] ?? '—'}</td>
          <td>${percent(sla.compliance[s])}</td>
          <td>${mttr ? days(mttr[s]) : '—'}</td>
        </tr>`,
      )}</tbody>
    </table></div>
    <section aria-label="Open findings over 90 days"><h2>Open findings, last 90 days</h2><${Chart} series=${series} /></section>
  </main>`;
}

function Chart({ series }: { series: Overview['series'] }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!el.current) return;
    const width = Math.max(300, Math.min(el.current.clientWidth, 1100));
    const plot = new uPlot(
      {
        width,
        height: 260,
        series: [{}, ...SEVERITIES.map((s) => ({ label: label(s), stroke: COLORS[s], width: 2 }))],
        axes: [{}, { size: 50 }],
      },
      [series.map((p) => p.at), ...SEVERITIES.map((s) => series.map((p) => p.open[s]))],
      el.current,
    );
    return () => plot.destroy();
  }, [series]);
  return html`<div class="chart" ref=${el} role="img" aria-label="Open findings by severity, weekly, over the last 90 days"></div>`;
}
