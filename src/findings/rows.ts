import { NIL_UUID } from '../domain/uuid.js';
import type { IssueBody } from '../issues/schema.js';
import type { SourceBody } from '../sources/schema.js';
import type { Decision } from '../decisions/store.js';

/** What the findings statements (page.ts) read, and the shape the render step takes. */

/** A finding's stored state, with its periods as epoch seconds. */
export interface StoredFinding {
  id: string;
  target_id: string;
  issue_id: string;
  affected_resource: string;
  status: 'OPEN' | 'FIXED';
  score: number;
  found: number[];
  fixed: number[];
}

/** The current attributes of a finding: its latest FOUND event's payload and source (SPEC §3.5.6). */
interface LatestEvent {
  details: string;
  impact_details: string;
  resources: string;
  affected_resource_string: string;
  source_id: string;
  source_name: SourceBody['name'];
  component: string;
  instance: string;
  options: string;
  source_epoch: number;
}

/** A finding with what its JSON shows of its latest event, issue and target (SPEC §6.1). */
export interface FindingWithContext extends StoredFinding {
  latest: LatestEvent | undefined;
  issue: IssueBody;
  identifier: string;
  teams: string[];
  /** SPEC §12.3: the decision active at the list's reference instant (set by the page's statements). */
  decision?: Decision | null;
}

/** A finding with its context as the page statements give it (page.ts, context.ts). */
export interface ContextRow extends StoredFinding {
  latest_details: string;
  latest_impact_details: string;
  latest_resources: string;
  latest_affected_resource_string: string;
  latest_source_id: string;
  latest_source_name: string;
  latest_component: string;
  latest_instance: string;
  latest_options: string;
  latest_source_epoch: number;
  issue_summary: string;
  issue_cwe_id: number;
  issue_description: string;
  issue_recommendations: string[];
  issue_reference_links: string[];
  issue_labels: string[];
  target_identifier: string;
  target_team_ids: string[];
}

export function withContext(r: ContextRow): FindingWithContext {
  return {
    id: r.id,
    target_id: r.target_id,
    issue_id: r.issue_id,
    affected_resource: r.affected_resource,
    status: r.status,
    score: r.score,
    found: r.found,
    fixed: r.fixed,
    latest:
      r.latest_source_id !== NIL_UUID
        ? {
            details: r.latest_details,
            impact_details: r.latest_impact_details,
            resources: r.latest_resources,
            affected_resource_string: r.latest_affected_resource_string,
            source_id: r.latest_source_id,
            // Every source stored is the scanner's (src/domain/ids.ts SOURCE_NAME).
            source_name: r.latest_source_name as SourceBody['name'],
            component: r.latest_component,
            instance: r.latest_instance,
            options: r.latest_options,
            source_epoch: r.latest_source_epoch,
          }
        : undefined,
    issue: {
      id: r.issue_id,
      summary: r.issue_summary,
      cwe_id: r.issue_cwe_id,
      description: r.issue_description,
      recommendations: r.issue_recommendations,
      reference_links: r.issue_reference_links,
      labels: r.issue_labels,
    },
    identifier: r.target_identifier,
    teams: r.target_team_ids,
  };
}
