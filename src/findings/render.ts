import { formatInstant } from '../domain/time.js';
import { NIL_UUID } from '../domain/uuid.js';
import { SOURCE_NAME } from '../domain/ids.js';
import type { FindingEventRow } from './queries.js';
import type { FindingWithContext } from './rows.js';
import type { FindingBody, FindingEventBody } from './schema.js';

/**
 * Finding objects (SPEC §6.1): state and exposures at the request's reference instant (SPEC §4.2),
 * current attributes and last source from the latest FOUND event, the issue, the target with its
 * teams, all read with the finding (findingPage, findingsByKeys).
 */

type ResourceGroups = FindingBody['resources'];

/** Resources as stored: the resource groups of a report validated at ingestion (src/queue/contract.ts). */
const parseResources = (text: string | undefined): ResourceGroups => {
  const value = text ? (JSON.parse(text) as unknown) : [];
  return Array.isArray(value) ? (value as ResourceGroups) : [];
};

/** Finding objects from rows read as shown at their reference instant (page.ts ROW_COLUMNS). */
export function renderFindings(rows: FindingWithContext[]): FindingBody[] {
  return rows.map((row) => {
    const event = row.latest;
    return {
      id: row.id,
      affected_resource: event?.affected_resource_string || row.affected_resource,
      details: event?.details ?? '',
      impact_details: event?.impact_details ?? '',
      status: row.status,
      total_exposure: row.total_exposure,
      ...(row.current_exposure !== null ? { current_exposure: row.current_exposure } : {}),
      sla_due: row.sla_due === null ? null : formatInstant(row.sla_due),
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
