import type { ParameterizedContext } from 'koa';
import { z } from 'zod';
import { ApiError, dbErrors } from '../errors.js';
import { addDays, parseDate } from '../domain/time.js';
import { SLA_FILTERS, type SlaFilter, type SlaPolicy } from '../sla/policy.js';

/**
 * Query parameters of the database API (SPEC §5.2–§5.5), parsed with one zod schema per endpoint
 * built from the shared field definitions below. Every field reports the SPEC §5.2 message; when
 * several are wrong, the first in the order page, size, dates, scores, boolean, status wins, and
 * the combination rules run last. Empty values count as absent; unknown parameters are ignored.
 */

/** `decision=` of findings lists (SPEC §12.3): findings by the decision active at the reference instant. */
export const DECISION_FILTERS = ['none', 'false_positive', 'accepted_risk', 'any'] as const;
export type DecisionFilter = (typeof DECISION_FILTERS)[number];

export interface SuppressionFilter {
  /** SPEC §12.3: statistics count suppressed findings too. */
  includeSuppressed?: boolean | undefined;
}

export interface Paging {
  page: number;
  size: number;
}

export interface FindingFilters {
  status?: 'OPEN' | 'FIXED';
  /** Start of the atDate day (the reference instant T, SPEC §4.1). */
  atDate?: number;
  /** Start of the minDate day (L, inclusive). */
  minDate?: number;
  /** Start of the day after maxDate (U, exclusive). */
  maxDateEnd?: number;
  minScore?: number;
  maxScore?: number;
  team?: string;
  teams?: string[];
  identifier?: string;
  identifierMatch?: boolean;
  identifiers?: string[];
  labels?: string[];
  /** The finding's issue summary contains this text, whatever the case (beyond SPEC §5.5: the triage page's search). */
  summary?: string;
  sortBy?: 'score' | '-score';
  /** SPEC §12.1: OPEN at the reference instant and past (breached) or not past (within) its deadline. */
  sla?: SlaFilter;
  /** The policy `sla` is judged by (SLA_DAYS): set with `sla` by the answer, never from a request. */
  slaPolicy?: SlaPolicy;
  /** SPEC §12.3: the decision active at the reference instant. */
  decision?: DecisionFilter;
  /** SPEC §12.3: statistics count suppressed findings too. */
  includeSuppressed?: boolean;
}

const PRECEDENCE = [
  'Malformed Page Number',
  'Malformed Size Number',
  'Size Number Too Large',
  'Malformed Date',
  'Malformed Score',
  'Malformed Boolean',
  'Invalid Status',
  'Invalid SLA',
  'Invalid Decision',
];

// A repeated parameter counts by its first value; an empty value is absent.
const emptyIsAbsent = (v: unknown) => {
  const first: unknown = Array.isArray(v) ? v[0] : v;
  return first === '' ? undefined : first;
};
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(emptyIsAbsent, schema.optional());

// Digits only, so the value is an integer; one beyond the safe range (page 10^30) is still a well
// formed number: a page past the end (404) or a size over the maximum, never a zod message.
const positiveInt = (message: string) =>
  z
    .string()
    .regex(/^\d+$/, { error: message })
    .transform((v) => Math.min(Number(v), Number.MAX_SAFE_INTEGER))
    .pipe(z.number().min(1, { error: message }));

const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, { error: 'Malformed Date' })
  .transform((v, ctx) => {
    const parsed = parseDate(v);
    if (parsed === undefined) ctx.addIssue({ code: 'custom', message: 'Malformed Date' });
    return parsed ?? 0;
  });

// Scores lie in [0, 10], so a well-formed score of any magnitude (even 400 digits, beyond a double)
// compares like one clamped to ±10^15, which the store can bind (it refuses unsafe integers).
const SCORE_BOUND = 1e15;
const score = z
  .string()
  .regex(/^-?\d+(\.\d+)?$/, { error: 'Malformed Score' })
  .transform((v) => Math.min(Math.max(Number(v), -SCORE_BOUND), SCORE_BOUND));

const TRUE = ['1', 't', 'T', 'true', 'TRUE', 'True'];
const FALSE = ['0', 'f', 'F', 'false', 'FALSE', 'False'];
const boolean = z
  .string()
  .refine((v) => TRUE.includes(v) || FALSE.includes(v), { error: 'Malformed Boolean' })
  .transform((v) => TRUE.includes(v));

const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== ''),
);

/** The most dates one `atDates` may name: a chart's points, not a way around SPEC §5.6. */
export const MAX_AT_DATES = 100;

// Each date once, in ascending order: the order and repetitions of a request change nothing.
const dateList = list.pipe(
  z
    .array(date)
    .max(MAX_AT_DATES, { error: 'Malformed Date' })
    .transform((days) => [...new Set(days)].sort((a, b) => a - b)),
);

export interface PageLimits {
  pageSizeDefault: number;
  pageSizeMax: number;
}

/** Every query parameter the database APIs know, each validated on its own. */
const baseFields = {
  page: optional(positiveInt('Malformed Page Number')).describe('Page number, from 1 (default 1)'),
  size: optional(positiveInt('Malformed Size Number')).describe('Page size, from 1 to PAGE_SIZE_MAX (default PAGE_SIZE_DEFAULT)'),
  atDate: optional(date).describe('YYYY-MM-DD: status and exposures at the start of that day (UTC); excludes minDate/maxDate'),
  atDates: optional(dateList).describe(
    `Comma-separated YYYY-MM-DD dates, at most ${MAX_AT_DATES}: the statistic at the start of each day, as atDate would give it`,
  ),
  minDate: optional(date).describe('YYYY-MM-DD: start of a range (inclusive); with status OPEN rule 1, FIXED rule 2 of SPEC §4.3'),
  maxDate: optional(date).describe('YYYY-MM-DD: end of a range (the whole day included)'),
  minScore: optional(score).describe('Current score at least this (decimal number)'),
  maxScore: optional(score).describe('Current score at most this (decimal number)'),
  identifiermatch: optional(boolean).describe('With identifier: exact match (true) instead of substring (false)'),
  status: optional(z.enum(['OPEN', 'FIXED'], { error: 'Invalid Status' })).describe('OPEN or FIXED (case-sensitive)'),
  team: optional(z.string()).describe('Targets associated with this team'),
  teams: optional(list).describe('Comma-separated teams: targets associated with at least one of them (each counted once)'),
  identifier: optional(z.string()).describe('Target identifier contains this text (case-sensitive)'),
  identifiers: optional(list).describe('Comma-separated target identifiers (exact)'),
  labels: optional(list).describe("Comma-separated labels: the finding's issue has at least one of them"),
  summary: optional(z.string()).describe("The finding's issue summary contains this text, ignoring case (beyond SPEC §5.5)"),
  sortBy: optional(z.string()).describe('score or -score (default: ascending id)'),
  sla: optional(z.enum(SLA_FILTERS, { error: 'Invalid SLA' })).describe(
    'breached or within: OPEN at the reference instant and past, or not past, its remediation deadline (SPEC §12.1)',
  ),
  decision: optional(z.enum(DECISION_FILTERS, { error: 'Invalid Decision' })).describe(
    'none, false_positive, accepted_risk or any: the triage decision active at the reference instant (SPEC §12.3)',
  ),
  includeSuppressed: optional(boolean).describe('true: count findings suppressed by a triage decision too (SPEC §12.3)'),
} as const;

export type FieldName = keyof typeof baseFields;
/** Every query parameter name the database APIs know (the OpenAPI test probes each). */
export const FIELD_NAMES = Object.keys(baseFields) as FieldName[];
type Fields = typeof baseFields;
export type FieldOutput<K extends FieldName> = z.output<Fields[K]>;

const sizeCap = (max: number) =>
  optional(positiveInt('Malformed Size Number').pipe(z.number().max(max, { error: 'Size Number Too Large' })));

function buildSchema<K extends FieldName>(names: readonly K[], limits?: PageLimits) {
  const shape = Object.fromEntries(
    names.map((n) => [n, n === 'size' && limits ? sizeCap(limits.pageSizeMax).describe(baseFields.size.description ?? '') : baseFields[n]]),
  );
  return z.object(shape as { [P in K]: Fields[P] });
}

/** The zod schema of an endpoint's parameters (the page size bounded by PAGE_SIZE_MAX). */
export function querySchema<K extends FieldName>(names: readonly K[], limits?: PageLimits) {
  return buildSchema(names, limits);
}

function firstError(error: z.ZodError): ApiError {
  const messages = error.issues.map((i) => i.message);
  const first = PRECEDENCE.find((m) => messages.includes(m)) ?? messages[0] ?? 'Bad Request';
  return new ApiError(400, first);
}

type RawQuery = ParameterizedContext['query'];

/**
 * The parser of the parameters an endpoint accepts, which throws the §5.2 error for the first bad
 * one. Routers build theirs once, with the router: building a schema (and zod's first parse, which
 * compiles it) costs about ten times a parse (~0.5 ms against ~0.04 ms for a findings list), and
 * the module holds no memo of them.
 */
export function queryParser<K extends FieldName>(names: readonly K[], limits?: PageLimits) {
  const schema = querySchema(names, limits);
  return (query: RawQuery) => {
    const parsed = schema.safeParse(query);
    if (!parsed.success) throw firstError(parsed.error);
    return parsed.data as { [P in K]: FieldOutput<P> };
  };
}

export function paging(q: { page?: number | undefined; size?: number | undefined }, limits: PageLimits): Paging {
  return { page: q.page ?? 1, size: q.size ?? limits.pageSizeDefault };
}

export interface DateParams {
  atDate?: number | undefined;
  minDate?: number | undefined;
  maxDate?: number | undefined;
}

/** SPEC §4.4: atDate excludes a range, and a range must not end before it starts. */
export function checkDates(d: DateParams): void {
  if (d.atDate !== undefined && (d.minDate !== undefined || d.maxDate !== undefined)) throw dbErrors.invalidCombination();
  if (d.minDate !== undefined && d.maxDate !== undefined && d.minDate > d.maxDate) throw dbErrors.invalidCombination();
}

/** The parameters of every findings list (SPEC §5.5) in validation order. */
export const FINDING_LIST_PARAMS = [
  'page',
  'size',
  'atDate',
  'minDate',
  'maxDate',
  'minScore',
  'maxScore',
  'identifiermatch',
  'status',
  'team',
  'teams',
  'identifier',
  'identifiers',
  'labels',
  'summary',
  'sortBy',
  'sla',
  'decision',
] as const satisfies readonly FieldName[];

/** The parser of a findings list request (SPEC §5.2, §4.4) into filters and paging; built once per router. */
export function findingListParser(limits: PageLimits) {
  const parse = queryParser(FINDING_LIST_PARAMS, limits);
  return (query: RawQuery) => {
    const q = parse(query);
    const page = paging(q, limits);
    checkDates(q);
    if ((q.minDate !== undefined || q.maxDate !== undefined) && q.status === undefined) throw dbErrors.invalidCombination();
    if (q.sortBy !== undefined && q.sortBy !== 'score' && q.sortBy !== '-score') throw dbErrors.invalidCombination();
    return { filters: toFilters(q), page };
  };
}

type ParsedFilterFields = Partial<{ [P in FieldName]: FieldOutput<P> }>;

export function toFilters(q: ParsedFilterFields): FindingFilters {
  const f: FindingFilters = {};
  if (q.status !== undefined) f.status = q.status;
  if (q.atDate !== undefined) f.atDate = q.atDate;
  if (q.minDate !== undefined) f.minDate = q.minDate;
  if (q.maxDate !== undefined) f.maxDateEnd = addDays(q.maxDate, 1);
  if (q.minScore !== undefined) f.minScore = q.minScore;
  if (q.maxScore !== undefined) f.maxScore = q.maxScore;
  if (q.team !== undefined) f.team = q.team;
  if (q.teams !== undefined && q.teams.length > 0) f.teams = q.teams;
  if (q.identifier !== undefined) f.identifier = q.identifier;
  if (q.identifiermatch !== undefined) f.identifierMatch = q.identifiermatch;
  if (q.identifiers !== undefined && q.identifiers.length > 0) f.identifiers = q.identifiers;
  if (q.labels !== undefined && q.labels.length > 0) f.labels = q.labels;
  if (q.summary !== undefined) f.summary = q.summary;
  if (q.sortBy === 'score' || q.sortBy === '-score') f.sortBy = q.sortBy;
  if (q.sla !== undefined) f.sla = q.sla;
  if (q.decision !== undefined) f.decision = q.decision;
  if (q.includeSuppressed !== undefined) f.includeSuppressed = q.includeSuppressed;
  return f;
}
