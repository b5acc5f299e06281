import { findingListEndpoint, mttrEndpoint } from '../answers.js';
import { listEndpoint, oneEndpoint } from '../http/endpoint.js';
import { findingEventListResponse, findingPeriodsResponse, findingResponse } from './schema.js';

/** The finding endpoints (SPEC §6.2, §6.8), declared once for the router (routes.ts) and the OpenAPI document. */
export const FINDING_ENDPOINTS = {
  list: findingListEndpoint('/findings', 'findings', 'List findings (filters of SPEC §5.5)'),
  one: oneEndpoint('/findings/{finding_id}', 'findings', 'One finding, evaluated now', findingResponse),
  events: listEndpoint('/findings/{finding_id}/events', 'findings', "A finding's FOUND events, latest first", findingEventListResponse),
  periods: oneEndpoint('/findings/{finding_id}/periods', 'findings', "A finding's OPEN periods, oldest first", findingPeriodsResponse),
  mttr: mttrEndpoint('/findings/{finding_id}/mttr', 'findings', "Mean time to remediate of the finding's closed periods, in days"),
} as const;
