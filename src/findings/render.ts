import { formatInstant, wholeHours } from '../domain/time.js';
import { NIL_UUID } from '../domain/uuid.js';
import { SOURCE_NAME } from '../domain/ids.js';
import type { Issue } from '../issues/queries.js';
import type { Source } from '../sources/queries.js';
import type { Target } from '../targets/queries.js';
import type { FindingEventRow } from './queries.js';
import type { FindingWithContext, StoredFinding } from './rows.js';

/**
 * Finding objects (SPEC §6.1): state and exposures at the request's reference instant (SPEC §4.2),
 * current attributes and last source from the latest FOUND event, the issue, the target with its
 * teams, all read with the finding (findingPage, findingsByKeys).
 */

export interface Exposure {
  status: 'OPEN' | 'FIXED';
  total_exposure: number;
  current_exposure?: number;
}

/**
 * SPEC §4.2 at instant T. With `atDate`, the status is the state at T; without, the finding's
 * current status (§3.5) with exposures run to now.
 */
export function exposureAt(row: Pick<StoredFinding, 'found' | 'fixed' | 'status'>, t: number, atDate: boolean): Exposure {
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

export interface Finding {
  id: string;
  affected_resource: string;
  details: string;
  impact_details: string;
  status: 'OPEN' | 'FIXED';
  score: number;
  total_exposure: number;
  current_exposure?: number;
  resources: unknown[];
  issue: Issue;
  target: Target;
  teams: string[];
  source: Source;
}

const parseResources = (text: string | undefined): unknown[] => {
  const value = text ? (JSON.parse(text) as unknown) : [];
  return Array.isArray(value) ? value : [];
};

export function renderFindings(rows: FindingWithContext[], ref: { t: number; atDate: boolean }): Finding[] {
  return rows.map((row) => {
    const event = row.latest;
    const target: Target = { id: row.target_id, identifier: row.identifier, teams: row.teams };
    return {
      id: row.id,
      affected_resource: event?.affected_resource_string || row.affected_resource,
      details: event?.details ?? '',
      impact_details: event?.impact_details ?? '',
      ...exposureAt(row, ref.t, ref.atDate),
      score: row.score,
      resources: parseResources(event?.resources),
      issue: row.issue,
      target,
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

export function renderEvent(e: FindingEventRow) {
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
