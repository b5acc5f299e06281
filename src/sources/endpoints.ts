import { listEndpoint, oneEndpoint } from '../http/endpoint.js';
import { sourceListResponse, sourceResponse } from './schema.js';

/**
 * The source endpoints (SPEC §6.3), declared once for the router (routes.ts) and the OpenAPI
 * document; a source's findings and MTTR are src/findings' (SOURCE_FINDING_ENDPOINTS).
 */
export const SOURCE_ENDPOINTS = {
  list: listEndpoint('/sources', 'sources', 'List sources (check executions) by time', sourceListResponse),
  one: oneEndpoint('/sources/{source_id}', 'sources', 'One source', sourceResponse),
} as const;
