import type { ParameterizedContext } from 'koa';
import { isUuid } from '../domain/uuid.js';
import { checkDates, querySchema, toFilters, type FieldName } from '../filters/params.js';
import { tooManyParams } from '../http/query.js';
import type { StatFilters } from '../stats/filters.js';
import { metricsErrors } from '../errors.js';

/**
 * Query parameters of the metrics API (SPEC §8.3): the database API's field definitions, with
 * every failure reported as the metrics API's single validation error (SPEC §8.2). Each endpoint
 * parses only the parameters it lists; anything else is ignored without validation.
 */

type RawQuery = ParameterizedContext['query'];

const teamsSchema = querySchema(['teams']);

/**
 * The `teams` of a global request as authorization sees them: entries trimmed, empty ones
 * dropped, none left = absent (global scope). Never fails; the entries' form is validated later.
 */
export function requestedTeams(query: RawQuery): string[] | undefined {
  const parsed = teamsSchema.safeParse(query);
  const teams = parsed.success ? parsed.data.teams : undefined;
  return teams !== undefined && teams.length > 0 ? [...new Set(teams)].sort() : undefined;
}

/**
 * Builds the parser of one endpoint's parameters (SPEC §8.3 table). `requireAtDates`: a series,
 * which answers nothing without its dates.
 */
export function metricQuery(names: readonly FieldName[], opts: { rejectAtDate?: boolean; requireAtDates?: boolean } = {}) {
  const schema = querySchema(names);
  return (query: RawQuery, teams?: string[]): StatFilters => {
    // SPEC §5.6: more than 256 parameters (counted when src/http/query.ts parsed them).
    if (tooManyParams(query)) throw metricsErrors.invalidQuery();
    const atDate = query.atDate;
    if (opts.rejectAtDate && atDate !== undefined && atDate !== '') throw metricsErrors.invalidQuery();
    const parsed = schema.safeParse(query);
    if (!parsed.success) throw metricsErrors.invalidQuery();
    try {
      checkDates(parsed.data);
    } catch {
      throw metricsErrors.invalidQuery();
    }
    if (teams?.some((t) => !isUuid(t))) throw metricsErrors.invalidQuery();
    const filters: StatFilters = toFilters(parsed.data);
    const { atDates } = parsed.data as { atDates?: number[] };
    if (atDates !== undefined && atDates.length > 0) filters.atDates = atDates;
    else if (opts.requireAtDates) throw metricsErrors.invalidQuery();
    return filters;
  };
}
