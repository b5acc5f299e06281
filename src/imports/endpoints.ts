import type { Endpoint } from '../http/endpoint.js';
import { IMPORT_FORMAT_NAMES } from './formats.js';
import { anyDocument, importAccepted } from './schema.js';

/** POST /imports/{format} (SPEC §13), declared once for the router (routes.ts) and the OpenAPI document. */
export const IMPORT_ENDPOINTS = {
  document: {
    method: 'post',
    path: '/imports/{format}',
    tag: 'ingestion',
    summary: `Queue the reports of a scanner's document (format: ${IMPORT_FORMAT_NAMES.join(' or ')})`,
    description:
      'SPEC §13: the document becomes Vulcan reports, each validated like a POST /checks body and queued as its own job; a document ' +
      'that is not of the format, names no target or converts to an invalid report is refused whole (400 with the reason, nothing ' +
      'queued); a document yielding more than 1,000 reports or more than MAX_REPORT_BYTES of report JSON is 413 Import Too Large ' +
      '(SPEC §5.6, nothing queued); the reports of a document are queued in one Redis transaction (503: none queued); an ' +
      'unknown format is 404. Query parameters: `target` (the target identifier of the reports; default: the ' +
      "document's own, SARIF versionControlProvenance[0].repositoryUri or Trivy ArtifactName) and `time` (RFC 3339: the report " +
      'time of a document that carries none; default: now; 400 Malformed Time). SARIF bodies may be sent as application/sarif+json. ' +
      'The same document imported twice is a duplicate (check ids derive from its SHA-256).',
    body: anyDocument,
    status: 202,
    response: importAccepted,
    errors: [400, 404, 413, 415, 503],
  } satisfies Endpoint,
} as const;
