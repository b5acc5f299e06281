import { z } from 'zod';
import { safeText } from '../domain/text.js';
import { entityIdSchema, paginationSchema, teamIdSchema } from '../http/schema.js';

/** POST /targets body (SPEC §6.6): types are checked (400) before emptiness rules (422). */
export const associateTeamsBody = z.object(
  {
    // Any text is accepted; unpaired surrogates become U+FFFD (SPEC §3.3 item 6), as in reports.
    identifier: safeText({ error: 'identifier must be a string' }).nullish(),
    teams: z
      .array(safeText({ error: 'teams must be an array of strings' }), {
        error: 'teams must be an array of strings',
      })
      .nullish(),
  },
  { error: 'request body must be a JSON object' },
);

/** SPEC §5.6 limits of POST /targets. */
const MAX_IDENTIFIER_LENGTH = 2048;
const MAX_TEAM_LENGTH = 256;
const MAX_TEAMS_PER_REQUEST = 100;

/** Whether `s` holds more than `max` characters (code points), without counting a short one. */
function longerThan(s: string, max: number): boolean {
  if (s.length <= max) return false;
  if (s.length > 2 * max) return true;
  let chars = 0;
  for (const _ of s) if (++chars > max) return true;
  return false;
}

/**
 * The 422 rules of a well-typed body (SPEC §5.2, §5.6, §6.6), in order: identifier rules before
 * team rules; undefined when the body passes.
 */
export function associationProblem(identifier: string | null | undefined, teams: readonly string[]): string | undefined {
  if (!identifier) return 'identifier can not be void';
  if (longerThan(identifier, MAX_IDENTIFIER_LENGTH)) return 'identifier too long';
  if (teams.some((t) => t === '')) return 'team can not be void';
  if (teams.some((t) => longerThan(t, MAX_TEAM_LENGTH))) return 'team too long';
  if (teams.length > MAX_TEAMS_PER_REQUEST) return 'too many teams';
  return undefined;
}

/** Response schemas of the target endpoints (SPEC §6.1, §6.5, §6.6). */

export const targetSchema = z
  .object({
    id: entityIdSchema.describe('Target id'),
    identifier: z.string().describe('Asset identifier: domain, hostname, URL, IP, account, image…'),
    teams: z.array(teamIdSchema).describe('Associated teams, in association order'),
  })
  .strict()
  .describe('An asset on which checks run');

/** GET /targets/{target_id}; POST /targets (201). */
export const targetResponse = z.object({ target: targetSchema }).strict().describe('One target');

/** GET /targets, GET /issues/{issue_id}/targets. */
export const targetListResponse = z
  .object({
    pagination: paginationSchema,
    targets: z.array(targetSchema).describe('Targets in ascending id order'),
  })
  .strict()
  .describe('A page of targets');

export type TargetBody = z.infer<typeof targetSchema>;
