import { formatInstant, wholeHours } from '../domain/time.js';
import { NIL_UUID } from '../domain/uuid.js';
import { SOURCE_NAME } from '../domain/ids.js';
import { severityOf } from '../domain/severity.js';
import { DEFAULT_SLA_POLICY, type SlaPolicy, slaDueAt } from '../sla/policy.js';
import type { FindingEventRow } from './queries.js';
import type { FindingWithContext, StoredFinding } from './rows.js';
import type { FindingBody, FindingEventBody } from './schema.js';

/**
 * Finding objects (SPEC §6.1): state and exposures at the request's reference instant (SPEC §4.2),
 * current attributes and last source from the latest FOUND event, the issue, the target with its
 * teams, all read with the finding (findingPage, findingsByKeys).
 */

type Exposure = Pick<FindingBody, 'status' | 'total_exposure' | 'current_exposure'>;

/**
 * SPEC §4.2 at instant T. With `atDate`, the status is the state at T; without, the finding's
 * current status (§3.5) with exposures run to now.
 */
function exposureAt(row: Pick<StoredFinding, 'found' | 'fixed' | 'status'>, t: number, atDate: boolean): Exposure {
  let total = 0;
  let openSince: number | undefined;
  row.found.forEach((found, i) => {
    if (found > t) return;
    const fixed = row.fixed[i]!;
    total += Math.min(fixed, t) - found;
    if (t < fixed) openSince = found;
  });
  const status = atDate ? (openSince !== undefined ? 'OPEN' : 'FIXED') : row.status;
  const out: Exposure = { status, total_exposure: wholeHours(total) };
  if (status === 'OPEN') {
    const since = atDate ? openSince! : row.found[row.found.length - 1]!;
    out.current_exposure = Math.max(0, wholeHours(t - since));
  }
  return out;
}

type ResourceGroups = FindingBody['resources'];

/** SPEC §12.1: the deadline of the period OPEN at t, by the severity of the current score. */
function slaDueText(row: Pick<StoredFinding, 'found' | 'fixed' | 'score'>, ref: FindingReference): string | null {
  const due = slaDueAt(row, severityOf(row.score), ref.t, ref.slaPolicy ?? DEFAULT_SLA_POLICY);
  return due === null ? null : formatInstant(due);
}

/** Resources as stored: the resource groups of a report validated at ingestion (src/queue/contract.ts). */
const parseResources = (text: string | undefined): ResourceGroups => {
  const value = text ? (JSON.parse(text) as unknown) : [];
  return Array.isArray(value) ? (value as ResourceGroups) : [];
};

/**
 * The reference instant t (atDate, or now) and the SLA policy (SLA_DAYS; the default when not
 * given) that `sla_due` is judged by.
 */
export interface FindingReference {
  t: number;
  atDate: boolean;
  slaPolicy?: SlaPolicy | undefined;
}

export function renderFindings(rows: FindingWithContext[], ref: FindingReference): FindingBody[] {
  return rows.map((row) => {
    const event = row.latest;
    return {
      id: row.id,
      affected_resource: event?.affected_resource_string || row.affected_resource,
      details: event?.details ?? '',
      impact_details: event?.impact_details ?? '',
      ...exposureAt(row, ref.t, ref.atDate),
      sla_due: slaDueText(row, ref),
      decision: row.decision ?? null,
      score: row.score,
      resources: parseResources(event?.resources),
      issue: row.issue,
      target: { id: row.target_id, identifier: row.identifier, teams: row.teams },
      teams: [...row.teams],
      source: {
        // Without its latest event (a batch's retry still to write it) the source is unknown; its id
        // still has the form clients parse.
        id: event?.source_id ?? NIL_UUID,
        name: event?.source_name ?? SOURCE_NAME,
        component: event?.component ?? '',
        instance: event?.instance ?? '',
        options: event?.options ?? '',
        time: formatInstant(event?.source_epoch ?? 0),
        // A source runs against its report's target, which is the finding's.
        target_id: row.target_id,
      },
    };
  });
}

export function renderEvent(e: FindingEventRow): FindingEventBody {
  return {
    id: e.id,
    finding_id: e.finding_id,
    source_id: e.source_id,
    score: e.score,
    details: e.details,
    resources: parseResources(e.resources),
    time: formatInstant(e.epoch),
  };
}
