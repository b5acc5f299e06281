import { useState } from 'preact/hooks';
import { type Api, ApiError, query } from '../api.js';
import { instant, label, severityOf } from '../format.js';
import { html } from '../html.js';
import { isNotFound, useLoad } from '../load.js';
import type { Decision, Decisions, Finding, FindingEvents, FindingPeriods } from '../types.js';

/** One finding: target, issue, periods as a timeline, FOUND events, deadline, decision and its audit trail. */

interface Loaded {
  finding: Finding;
  periods: FindingPeriods['periods'];
  events: FindingEvents;
  decisions: Decision[];
}

async function loadFinding(api: Api, id: string): Promise<Loaded> {
  // The metrics API decides what the caller may see (404 outside its teams), also where the database API is open.
  const { decisions } = await api.metrics<Decisions>(`/findings/${encodeURIComponent(id)}/decisions`);
  const [{ finding }, { periods }, events] = await Promise.all([
    api.db<{ finding: Finding }>(`/findings/${id}`),
    api.db<FindingPeriods>(`/findings/${id}/periods`),
    api.db<FindingEvents>(`/findings/${id}/events${query({ size: 20 })}`),
  ]);
  return { finding, periods, events, decisions };
}

export function FindingView({ api, id }: { api: Api; id: string }) {
  const [loaded, reload] = useLoad(() => loadFinding(api, id), id);
  if (loaded.state === 'loading') return html`<main><p class="loading">Loading…</p></main>`;
  if (loaded.state === 'error')
    return html`<main><h1>${isNotFound(loaded.error) ? 'Not found' : 'Error'}</h1>
      <p role="alert" class="error">${isNotFound(loaded.error) ? 'This finding does not exist or is not one of your teams’.' : loaded.error.message}</p></main>`;
  const { finding: f, periods, events, decisions } = loaded.data;
  const sev = severityOf(f.score);
  return html`<main class="finding">
    <h1><span class=${`sev sev-${sev}`}>${label(sev)} ${f.score}</span> ${f.issue.summary}</h1>
    <dl class="facts">
      <dt>Target</dt><dd>${f.target.identifier}</dd>
      <dt>Affected resource</dt><dd>${f.affected_resource}</dd>
      <dt>Status</dt><dd>${f.status}</dd>
      <dt>SLA due</dt><dd data-testid="sla-due">${instant(f.sla_due)}</dd>
      <dt>Decision</dt><dd data-testid="active-decision">${f.decision ? `${label(f.decision.decision)} — ${f.decision.reason}` : 'none'}</dd>
      <dt>Teams</dt><dd>${f.teams.join(', ') || '—'}</dd>
    </dl>
    <section><h2>Timeline</h2><${Timeline} periods=${periods} events=${events.events.map((e) => e.time)} /></section>
    <section><h2>Issue</h2>
      <p>${f.issue.description || 'No description.'}</p>
      ${f.issue.recommendations.length > 0 && html`<h3>Recommendations</h3><ul>${f.issue.recommendations.map((r) => html`<li>${r}</li>`)}</ul>`}
      ${f.issue.reference_links.length > 0 && html`<h3>References</h3><ul>${f.issue.reference_links.map((r) => html`<li><a href=${r} rel="noreferrer noopener" target="_blank">${r}</a></li>`)}</ul>`}
    </section>
    <section><h2>Decision</h2><${DecisionForm} api=${api} id=${f.id} active=${f.decision} done=${reload} /></section>
    <section><h2>Audit trail</h2><${AuditTrail} decisions=${decisions} /></section>
    <section><h2>Detections</h2>
      <ul class="events">${events.events.map((e) => html`<li>${instant(e.time)} — score ${e.score}${e.details ? html`: <span class="details">${e.details}</span>` : ''}</li>`)}</ul>
      ${events.pagination.total > events.events.length && html`<p class="help">latest ${events.events.length} of ${events.pagination.total}</p>`}
    </section>
  </main>`;
}

function Timeline({ periods, events }: { periods: FindingPeriods['periods']; events: string[] }) {
  if (periods.length === 0) return html`<p>No period.</p>`;
  const now = Date.now();
  const start = Date.parse(periods[0]!.found_at);
  const span = Math.max(1, now - start);
  const x = (t: number) => ((t - start) / span) * 1000;
  return html`<svg class="timeline" viewBox="0 0 1000 40" preserveAspectRatio="none" role="img"
      aria-label=${periods.map((p) => `open from ${instant(p.found_at)} to ${p.fixed_at ? instant(p.fixed_at) : 'now'}`).join('; ')}>
      <rect x="0" y="16" width="1000" height="8" class="fixed-bar" />
      ${periods.map((p) => {
        const a = x(Date.parse(p.found_at));
        const b = x(p.fixed_at ? Date.parse(p.fixed_at) : now);
        return html`<rect x=${a} y="10" width=${Math.max(2, b - a)} height="20" class="open-bar" />`;
      })}
      ${events.map((t) => html`<line x1=${x(Date.parse(t))} x2=${x(Date.parse(t))} y1="4" y2="36" class="event-tick" />`)}
    </svg>
    <ol class="periods">${periods.map((p) => html`<li>OPEN ${instant(p.found_at)} → ${p.fixed_at ? `FIXED ${instant(p.fixed_at)}` : 'still open'}</li>`)}</ol>`;
}

function DecisionForm({ api, id, active, done }: { api: Api; id: string; active: Decision | null; done: () => void }) {
  const [kind, setKind] = useState<'false_positive' | 'accepted_risk'>('accepted_risk');
  const [reason, setReason] = useState('');
  const [expires, setExpires] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const act = async (request: () => Promise<unknown>) => {
    setBusy(true);
    setError('');
    try {
      await request();
      setReason('');
      setExpires('');
      done();
    } catch (e) {
      setError(e instanceof ApiError || e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  const put = (e: Event) => {
    e.preventDefault();
    const body = { decision: kind, reason, ...(expires ? { expires_at: `${new Date(expires).toISOString().slice(0, 19)}Z` } : {}) };
    return act(() => api.metrics(`/findings/${id}/decision`, { method: 'PUT', body: JSON.stringify(body) }));
  };
  return html`${
    active &&
    html`<p>Active: <strong>${label(active.decision)}</strong> by ${active.by}, until ${instant(active.expires_at)}.
      <button type="button" disabled=${busy} onClick=${() => act(() => api.metrics(`/findings/${id}/decision`, { method: 'DELETE' }))}>Revoke</button></p>`
  }
    <form class="decision" onSubmit=${put} noValidate>
      <label>Decision <select name="decision" value=${kind} onChange=${(e: Event) => setKind((e.target as HTMLSelectElement).value as typeof kind)}>
        <option value="accepted_risk">accepted risk</option><option value="false_positive">false positive</option></select></label>
      <label>Reason <textarea name="reason" rows="3" value=${reason} onInput=${(e: Event) => setReason((e.target as HTMLTextAreaElement).value)}></textarea></label>
      <label>Expires (your local time) <input name="expires_at" type="datetime-local" value=${expires} onInput=${(e: Event) => setExpires((e.target as HTMLInputElement).value)} /></label>
      <p role="alert" class="error" aria-live="polite">${error}</p>
      <button type="submit" class="primary" disabled=${busy}>${active ? 'Replace the decision' : 'Record the decision'}</button>
    </form>`;
}

function AuditTrail({ decisions }: { decisions: Decision[] }) {
  if (decisions.length === 0) return html`<p>No decision was ever made.</p>`;
  return html`<ol class="audit" data-testid="audit">${decisions.map(
    (d) => html`<li>
      <strong>${label(d.decision)}</strong> by ${d.by} at ${instant(d.created_at)}${d.expires_at ? `, until ${instant(d.expires_at)}` : ''}: “${d.reason}”
      ${d.revoked_at ? html` <em>revoked by ${d.revoked_by} at ${instant(d.revoked_at)}</em>` : ''}
    </li>`,
  )}</ol>`;
}
