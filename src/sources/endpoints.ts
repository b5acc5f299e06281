import { findingListEndpoint, mttrEndpoint } from '../answers.js';
import { listEndpoint, oneEndpoint } from '../http/endpoint.js';
import { sourceListResponse, sourceResponse } from './schema.js';

/** The source endpoints (SPEC §6.3), declared once for the router (routes.ts) and the OpenAPI document. */
export const SOURCE_ENDPOINTS = {
  list: listEndpoint('/sources', 'sources', 'List sources (check executions) by time', sourceListResponse),
  one: oneEndpoint('/sources/{source_id}', 'sources', 'One source', sourceResponse),
  findings: findingListEndpoint('/sources/{source_id}/findings', 'sources', 'Findings the source reported'),
  mttr: mttrEndpoint('/sources/{source_id}/mttr', 'sources', "MTTR in days of the source's whole family (name, component, options)"),
} as const;
