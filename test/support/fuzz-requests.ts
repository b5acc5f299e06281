import { createSecretKey } from 'node:crypto';
import http from 'node:http';
import type { Queue, Worker } from 'bullmq';
import fc from 'fast-check';
import { startIngestWorkers } from '../../src/ingest/worker.js';
import type { Config } from '../../src/config.js';
import type { ReportBatcher } from '../../src/ingest/batcher.js';
import type { Logger } from '../../src/log.js';
import { workerConnection, type RedisNames } from '../../src/queue/redis.js';
import type { z } from 'zod';
import { errorBodySchema } from '../../src/http/schema.js';
import { FINDING_LIST_PARAMS } from '../../src/filters/params.js';
import { METRICS } from '../../src/metrics/routes.js';
import { signJwt } from '../../src/metrics/sign.js';
import { dbOperations } from '../../src/openapi/operations.js';
import { checkReport } from '../../src/queue/contract.js';
import {
  assetStatsResponse,
  currentExposureStatsResponse,
  exposureStatsResponse,
  fixedStatsResponse,
  mttrStatsResponse,
  openStatsResponse,
} from '../../src/stats/schema.js';
import { decisionRequests, webhookRequests } from './fuzz-bodies.js';
import { importRequests } from './fuzz-imports.js';
import { fid, findings, I1, I2, I3, I4, I5, iid, reports, sid, T1, T2, T3, T4, TEAM_A, TEAM_B, tid } from './api-catalog.js';

/**
 * The fuzz campaign of both APIs (issue 21), shared by test/fuzz.test.ts and `npm run fuzz`
 * (test/fuzz/run.ts): fast-check arbitraries of hostile HTTP requests over every route, a client
 * that sends them as they are (node:http with keep-alive, the request line unnormalised), and the
 * checks every answer must pass — never a 5xx, the SPEC's error body for every error status
 * (database API `{"message"}`, metrics API `{"code","error","type"}`), JSON, and where the request
 * makes the answer certain (an unknown path, a wrong method, a wrong media type, a valid report)
 * the status the SPEC gives. Writes are accounted for: each accepted report's job id and each
 * target a 201 returned are kept for the checks after the campaign.
 *
 * Nothing here imports vitest: the runner uses it outside the test runner.
 */

// ---------------------------------------------------------------------------------------------
// What the generator knows about the service under test
// ---------------------------------------------------------------------------------------------

export interface FuzzContext {
  /** Ids that exist in the store (the catalog), by kind. */
  ids: { finding: string[]; issue: string[]; target: string[]; source: string[] };
  /** Target identifiers, team ids and labels that exist. */
  identifiers: string[];
  teams: string[];
  labels: string[];
  /** Metrics API bearer tokens: an admin, a member of `memberTeam`, and refused ones. */
  tokens: { admin: string; oddSub: string; member: string; memberTeam: string; ingest: string; refused: string[]; odd: string };
  maxReportBytes: number;
  /** The database API runs with DB_API_AUTH=jwt: its requests carry these tokens too (SPEC §5.1). */
  dbAuth?: boolean;
  /** Loopback base URL of the webhooks the campaign subscribes (a receiver answering 204: no retries pile up). */
  hookBase?: string;
}

/** Tokens signed with the service's JWT_SECRET, valid for a day (admin, member of `team`), and refused ones. */
export function fuzzTokens(secret: string, team: string): FuzzContext['tokens'] {
  const key = createSecretKey(Buffer.from(secret));
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>) => signJwt({ sub: 'fuzz', iat: now, exp: now + 86_400, ...claims }, key);
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const other = createSecretKey(Buffer.from('another-secret-0123456789abcdef-0123456789'));
  return {
    admin: sign({ admin: true }),
    // An admin whose sub (recorded as a decision's `by`) holds a lone surrogate and a NUL.
    oddSub: sign({ sub: 'fuzz\ud800\u0000', admin: true }),
    member: sign({ teams: [team] }),
    memberTeam: team,
    // May write (SPEC §5.1 `"scopes": ["ingest"]`), reads only its teams.
    ingest: sign({ teams: ['b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f'], scopes: ['ingest'] }),
    // Valid, with teams no API would issue.
    odd: sign({ teams: ['\ud800', "'; DROP TABLE findings; --", '{x:String}', '%zz'] }),
    refused: [
      'not.a-jwt',
      `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'x', admin: true })}.`,
      signJwt({ sub: 'x', admin: true }, other),
      sign({ exp: now - 3600 }),
      sign({ nbf: now + 3600 }),
      sign({ sub: '' }),
      sign({ teams: 'x' }),
      sign({ admin: 'true' }),
      `${'a'.repeat(100)}.${'b'.repeat(100)}.${'c'.repeat(100)}`,
      '%ED%A0%80.%zz.%',
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// The requests
// ---------------------------------------------------------------------------------------------

export type Api = 'db' | 'metrics';

/** One generated request. Printed (fast-check counterexamples) with its body cut short. */
export class FuzzRequest {
  constructor(
    readonly api: Api,
    /** What the request aims at, for grouping failures: `GET /findings/{finding_id}`, `POST /checks`… */
    readonly route: string,
    readonly method: string,
    /** The request target as sent: path and query, never normalised. */
    readonly target: string,
    readonly headers: Record<string, string | string[]>,
    readonly body: string | Buffer | undefined,
    /** The statuses the SPEC allows for this request, when the generator knows them. */
    readonly expect: readonly number[] | undefined,
    /** The schema a 2xx answer's body must match, when the path is a route's canonical form. */
    readonly schema: z.ZodType | undefined,
    /** Send the body in chunks without a Content-Length. */
    readonly chunked = false,
  ) {}

  [fc.toStringMethod](): string {
    const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);
    const body = this.body === undefined ? '' : ` body ${cut(JSON.stringify(this.body.toString()), 400)}`;
    return `${this.api} ${this.method} ${cut(this.target, 400)} headers ${cut(JSON.stringify(this.headers), 300)}${this.chunked ? ' chunked' : ''}${body} [${this.route}]`;
  }
}

// ----- strings --------------------------------------------------------------------------------

const LONE_SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff'];
const SPECIAL_CHARS = [
  ...LONE_SURROGATES,
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u2028',
  '\u202e',
  '\ufeff',
  '\ufffd',
  '\uffff',
  '\u{10ffff}',
  '\u{1f4a9}',
  'é',
  'Ω',
  'ß',
  'İ',
  "'",
  '"',
  '\\',
  '`',
  '{',
  '}',
  '[',
  ']',
  ':',
  ',',
  ';',
  '%',
  '&',
  '=',
  '?',
  '#',
  '/',
  '+',
  '*',
  '$',
  '@',
  '<',
  '>',
  '|',
  ' ',
  '\t',
  '\n',
  '\r',
];
/** SQL and ClickHouse parameter syntax, date and number oddities, words the service knows. */
const TOKENS = [
  "'; DROP TABLE findings; --",
  "' OR '1'='1",
  "\\'; SELECT 1; --",
  '{x:String}',
  '{id:UUID}',
  '{db:Identifier}',
  '{team:Array(String)}',
  '{{x}}',
  '{x:String',
  '\\',
  "\\'",
  '\\0',
  '\\N',
  '%',
  '%zz',
  '%ED%A0%80',
  '%00',
  '%%',
  'NULL',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-Infinity',
  '1e309',
  '-1e309',
  '-0',
  '0x10',
  '1_000',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '0000-00-00',
  '2024-02-30',
  '99999-01-01',
  '2024-13-01',
  '0001-01-01',
  '0070-01-01',
  '1969-12-31',
  '1970-01-01',
  '2106-02-07',
  '2106-02-08',
  '9999-12-31',
  '2024-02-29',
  '2023-02-29',
  '2024-01-05 10:00:00',
  '2024-01-05T10:00:00Z',
  'FINISHED',
  'RUNNING',
  'OPEN',
  'FIXED',
  'vulcan',
  '$(id)',
  '`id`',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  'SELECT 1',
  'a,b,,c',
  ' , ',
  '00000000-0000-0000-0000-000000000000',
  'A3C5E7F9-1B2D-4F6A-8C0E-2B4D6F8A0C1E',
];

const oddChar = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  // Any code point, lone surrogates included (fc's 'binary' unit is slow to shrink: it maps 1.1M values back).
  { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0x10ffff }).map((c) => String.fromCodePoint(c)) },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_CHARS) },
);

/** Strings clients should not send but may: control characters, lone surrogates, SQL, long runs. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: oddChar, maxLength: 20 }) },
  { weight: 4, arbitrary: fc.constantFrom(...TOKENS) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.string({ unit: oddChar, maxLength: 6 }), fc.constantFrom(...LONE_SURROGATES), fc.string({ unit: oddChar, maxLength: 6 }))
      .map((parts) => parts.join('')),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...TOKENS, ...SPECIAL_CHARS), fc.integer({ min: 50, max: 1000 })).map(([s, n]) => s.repeat(n)),
  },
);

/** Tens to hundreds of thousands of characters. */
export const hugeString = fc
  .tuple(
    fc.constantFrom('x', '\ud800', '{x:String}', "'", '\\', '\u0000', 'é', '\u{1f4a9}', '%zz'),
    fc.integer({ min: 10_000, max: 200_000 }),
  )
  .map(([s, n]) => s.repeat(Math.ceil(n / s.length)));

// ----- JSON text ------------------------------------------------------------------------------

export const str = (s: string) => JSON.stringify(s); // lone surrogates come out as \udXXX escapes, as clients send them

const NUMBER_TEXTS = [
  '0',
  '-0',
  '0.0',
  '-0.0',
  '1',
  '-1',
  '10',
  '10.0',
  '10.000000001',
  '79.0',
  '2147483647',
  '2147483648',
  '-2147483649',
  '1e309',
  '-1e309',
  '1e-400',
  '1E2',
  '5e-1',
  '9007199254740993',
  '123456789012345678901234567890',
  '0.1',
  '4.2',
];

const scalarText = fc.oneof(
  { weight: 3, arbitrary: oddString.map(str) },
  { weight: 2, arbitrary: fc.constantFrom(...NUMBER_TEXTS) },
  { weight: 1, arbitrary: fc.double().map((d) => JSON.stringify(d)) },
  { weight: 1, arbitrary: fc.constantFrom('true', 'false', 'null', '""', '[]', '{}') },
);

/** `n` levels of arrays or objects around `inner`. */
function nested(open: string, close: string, n: number, inner: string): string {
  return open.repeat(n) + inner + close.repeat(n);
}
const DEEP_SHAPES: [string, string][] = [
  ['[', ']'],
  ['{"a":', '}'],
  ['{"a":[', ']}'],
  ['[{"summary":"x","resources":', '}]'],
];
const deepText = fc
  .tuple(fc.constantFrom(...DEEP_SHAPES), fc.oneof(fc.integer({ min: 100, max: 1000 }), fc.integer({ min: 1000, max: 8000 })), scalarText)
  .map(([[open, close], n, inner]) => nested(open, close, n, inner));

/** Any JSON text, with repeated keys, odd numbers and (sometimes) deep nesting. */
export const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 6, arbitrary: scalarText },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 5 }).map((items) => `[${items.join(',')}]`) },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.tuple(fc.oneof(oddString, fc.constantFrom('status', 'summary', 'a')), tie('value')), { maxLength: 5 })
        .map((entries) => `{${entries.map(([k, v]) => `${str(k)}:${v}`).join(',')}}`),
    },
  ),
})).value;

export const anyJson = fc.oneof({ weight: 10, arbitrary: jsonText }, { weight: 1, arbitrary: deepText });

/** An object's text from entries; keys may repeat (the last one wins in JSON.parse). */
export const objectText = (entries: [string, string][]) => `{${entries.map(([k, v]) => `${str(k)}:${v}`).join(',')}}`;

const ABSENT = undefined;
/** A field's value text: mostly valid, sometimes absent, null or anything at all. */
export function field(valid: fc.Arbitrary<string>, weightValid = 30): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: weightValid, arbitrary: valid },
    { weight: 1, arbitrary: fc.constant(ABSENT) },
    { weight: 1, arbitrary: fc.constant('null') },
    { weight: 1, arbitrary: anyJson },
  );
}

/** Text that reports may carry: plain words mostly, odd strings (lone surrogates included), huge ones rarely. */
const reportText = fc.oneof(
  { weight: 200, arbitrary: fc.constantFrom('www.example.com', 'vulcan-tls', 'check-1', '{"timeout":60}', 'alpha.example.com', '') },
  { weight: 200, arbitrary: oddString },
  // Rare: a report holds a dozen strings or more, and accepted reports stay queued until the test ends.
  { weight: 1, arbitrary: hugeString },
);
const nonEmptyText = reportText.map((s) => (s === '' ? 'x' : s));

const TIMESTAMPS = [
  '2024-01-05 10:00:00',
  '2024-01-05T10:00:00Z',
  '2024-01-05T10:00:00z',
  '2024-01-05t10:00:00Z',
  '2024-01-05T10:00:00',
  '2024-01-05T10:00:00.999999999Z',
  '2024-01-05T10:00:00+02:00',
  '2024-01-05T10:00:00-23:59',
  '2024-01-05T10:00:00+24:00',
  '0000-00-00 00:00:00',
  '2024-02-30 10:00:00',
  '99999-01-01 00:00:00',
  '0001-01-01 00:00:00',
  '0070-01-01 00:00:00',
  '1969-12-31 23:59:59',
  '1970-01-01 00:00:00',
  '2106-02-07 06:28:14',
  '2106-02-07 06:28:15',
  '9999-12-31 23:59:59',
  '2024-01-05 24:00:00',
  '2024-01-05 23:59:60',
  '2024-1-5 10:00:00',
  '2024-01-05',
  '1704448800',
  '',
  ' ',
];
const timestampText = fc.oneof(
  { weight: 40, arbitrary: fc.constantFrom('2024-01-05 10:00:00', '2024-02-20T00:00:00Z', '2024-02-29T23:59:59.5+01:00').map(str) },
  { weight: 6, arbitrary: fc.constantFrom(...TIMESTAMPS).map(str) },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: true }).map((d) => str(d.toISOString())) },
  { weight: 1, arbitrary: oddString.map(str) },
);

const stringListText = fc.oneof(
  { weight: 4, arbitrary: fc.array(reportText, { maxLength: 4 }).map((a) => JSON.stringify(a)) },
  { weight: 1, arbitrary: fc.array(fc.oneof(reportText.map(str), anyJson), { maxLength: 4 }).map((a) => `[${a.join(',')}]`) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 100, max: 3000 }).map((n) => JSON.stringify(Array.from({ length: n }, (_, i) => `l${i % 50}`))),
  },
);

const resourceGroupText = fc
  .record({
    nameKey: fc.constantFrom('name', 'Name', 'NAME', 'nAmE'),
    name: field(reportText.map(str)),
    headerKey: fc.constantFrom('header', 'Header'),
    header: field(stringListText),
    rowsKey: fc.constantFrom('rows', 'Rows'),
    rows: field(fc.array(fc.dictionary(oddString, reportText, { maxKeys: 4 }), { maxLength: 4 }).map((rows) => JSON.stringify(rows))),
    extra: fc.array(fc.tuple(oddString, anyJson), { maxLength: 2 }),
  })
  .map((r) => {
    const entries: [string, string][] = [];
    if (r.name !== ABSENT) entries.push([r.nameKey, r.name]);
    if (r.header !== ABSENT) entries.push([r.headerKey, r.header]);
    if (r.rows !== ABSENT) entries.push([r.rowsKey, r.rows]);
    return objectText([...entries, ...r.extra]);
  });

const scoreText = fc.oneof(
  { weight: 12, arbitrary: fc.double({ min: 0, max: 10, noNaN: true }).map((d) => JSON.stringify(d)) },
  { weight: 2, arbitrary: fc.constantFrom(...NUMBER_TEXTS) },
);
const cweText = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: 0, max: 2147483647 }).map(String) },
  { weight: 2, arbitrary: fc.constantFrom(...NUMBER_TEXTS) },
);

const vulnerabilityText = fc
  .record({
    summary: field(nonEmptyText.map(str), 20),
    description: field(reportText.map(str)),
    score: field(scoreText),
    cwe_id: field(cweText),
    recommendations: field(stringListText),
    references: field(stringListText),
    labels: field(stringListText),
    details: field(reportText.map(str)),
    impact_details: field(reportText.map(str)),
    affected_resource: field(reportText.map(str)),
    affected_resource_string: field(reportText.map(str)),
    fingerprint: field(reportText.map(str)),
    resources: field(fc.array(resourceGroupText, { maxLength: 3 }).map((g) => `[${g.join(',')}]`)),
    extra: fc.array(fc.tuple(fc.constantFrom('id', 'category', 'attachments', 'vulnerabilities', 'x'), anyJson), { maxLength: 2 }),
  })
  .map(({ extra, ...fields }) => objectText([...definedEntries(fields), ...extra]));

export function definedEntries(fields: Record<string, string | undefined>): [string, string][] {
  return Object.entries(fields).filter((e): e is [string, string] => e[1] !== ABSENT);
}

const STATUS_TEXTS = [
  '"FINISHED"',
  '"RUNNING"',
  '"finished"',
  '"FINISHED "',
  '""',
  '"FAILED"',
  '123',
  'null',
  'true',
  '["FINISHED"]',
  '"\\ud800"',
  '"FINISHED\\u0000"',
];

/** A report body: a valid report with fields replaced, repeated or nested deep, or not an object at all. */
const reportBody = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .record({
        status: fc.oneof(
          { weight: 24, arbitrary: fc.constant('"FINISHED"') },
          { weight: 2, arbitrary: fc.constantFrom(...STATUS_TEXTS) },
          { weight: 1, arbitrary: fc.constant(ABSENT) },
        ),
        check_id: field(nonEmptyText.map(str)),
        checktype_name: field(nonEmptyText.map(str)),
        checktype_version: field(reportText.map(str)),
        target: field(nonEmptyText.map(str)),
        options: field(reportText.map(str)),
        tag: field(reportText.map(str)),
        start_time: field(timestampText, 8),
        end_time: field(timestampText),
        vulnerabilities: field(fc.array(vulnerabilityText, { maxLength: 4 }).map((v) => `[${v.join(',')}]`)),
        extra: fc.array(
          fc.tuple(
            fc.oneof(
              { weight: 8, arbitrary: fc.constantFrom('error', 'notes', 'data', 'not_applicable', 'unknown') },
              { weight: 1, arbitrary: fc.constantFrom('status', 'target', '__proto__', 'vulnerabilities') },
            ),
            anyJson,
          ),
          { maxLength: 3 },
        ),
        shuffle: fc.boolean(),
      })
      .map(({ extra, shuffle, ...fields }) => {
        const entries = definedEntries(fields);
        // Repeated keys: the extra entries come after (they win) or before (they lose) the report's own.
        return objectText(shuffle ? [...extra, ...entries] : [...entries, ...extra]);
      }),
  },
  { weight: 1, arbitrary: anyJson },
);

/** A POST /targets body: identifiers and teams of every kind and length, wrong types, nesting. */
const targetsBody = (ctx: FuzzContext) => {
  const identifier = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ctx.identifiers, 'fuzz.example.com', 'x') },
    { weight: 4, arbitrary: oddString },
    { weight: 1, arbitrary: fc.integer({ min: 2040, max: 2060 }).map((n) => 'i'.repeat(n)) },
    { weight: 1, arbitrary: hugeString },
  );
  const team = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ctx.teams) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 3, arbitrary: oddString },
    { weight: 1, arbitrary: fc.integer({ min: 250, max: 260 }).map((n) => 't'.repeat(n)) },
  );
  const teams = fc.oneof(
    { weight: 6, arbitrary: fc.array(team, { maxLength: 4 }).map((t) => JSON.stringify(t)) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 95, max: 130 }).map((n) => JSON.stringify(Array.from({ length: n }, (_, i) => `fuzz-team-${i}`))),
    },
    { weight: 1, arbitrary: fc.array(fc.oneof(team.map(str), anyJson), { maxLength: 4 }).map((t) => `[${t.join(',')}]`) },
  );
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .record({
          identifier: field(identifier.map(str), 8),
          teams: field(teams, 6),
          extra: fc.array(fc.tuple(fc.constantFrom('identifier', 'teams', 'id', 'data'), anyJson), { maxLength: 2 }),
          shuffle: fc.boolean(),
        })
        .map(({ extra, shuffle, ...fields }) => {
          const entries = definedEntries(fields);
          return objectText(shuffle ? [...extra, ...entries] : [...entries, ...extra]);
        }),
    },
    { weight: 1, arbitrary: anyJson },
  );
};
/** Bodies that are not JSON, or are JSON only in part. */
export const brokenBody = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\n',
    '{',
    '[',
    '{"status":"FINISHED"',
    '{"a":1,}',
    "{'a':1}",
    'NaN',
    'undefined',
    '\u0000',
    '\ufeff{}',
    '{"a":"\\ud800"',
    '{"a":"\\x41"}',
    '{"a":"\\u12"}',
    '"\\ud800"',
  ),
  oddString,
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('latin1')),
);

// ----- headers --------------------------------------------------------------------------------

const JSON_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json;charset=UTF-16',
  'application/json; boundary=x; charset=latin1',
  ' application/json ',
  'application/json;;;',
];
const OTHER_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json-patch+json',
  'application/vnd.api+json',
  'text/json',
  'json',
  '*/*',
  ';',
  ',',
  'application/json, text/plain',
];

export type ContentType = { value: string | string[] | undefined; json: boolean };
export const contentType: fc.Arbitrary<ContentType> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...JSON_TYPES).map((value) => ({ value, json: true })) },
  { weight: 2, arbitrary: fc.constant({ value: undefined, json: true }) },
  { weight: 3, arbitrary: fc.constantFrom(...OTHER_TYPES).map((value) => ({ value, json: false })) },
);

const ACCEPTS = ['application/json', 'text/html', '*/*', 'application/xml', ''];

// ----- paths and query strings ----------------------------------------------------------------

/** Percent-encodes the UTF-8 form (an unpaired surrogate as U+FFFD's bytes, as a client's encoder would). */
export function percentEncode(s: string): string {
  return encodeURIComponent(s.isWellFormed() ? s : s.toWellFormed());
}
/**
 * Keeps the printable ASCII a request line can carry raw (quotes, braces, backslashes… as they are)
 * and encodes the rest. Node's HTTP parser itself refuses bytes 0x7f–0xff in a request target
 * (a bare 400 before any app sees the request), so those are always encoded.
 */
function rawEncode(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    out += c >= 0x21 && c <= 0x7e && ch !== '#' ? ch : percentEncode(ch);
  }
  return out;
}
const RAW_ODDITIES = [
  '%',
  '%zz',
  '%ED%A0%80',
  '%C3',
  '%C0%AF',
  '%2F',
  '%00',
  '%%',
  '%2',
  '%u0041',
  '%FF%FE',
  '+',
  '..',
  '.',
  ';x',
  '%3B',
  '%20',
];

const encodedString = (s: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 5, arbitrary: s.map(percentEncode) },
    { weight: 2, arbitrary: s.map(rawEncode) },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_ODDITIES) },
    { weight: 1, arbitrary: fc.tuple(s.map(percentEncode), fc.constantFrom(...RAW_ODDITIES)).map(([a, b]) => a + b) },
  );

const DATES = [
  '2024-01-05',
  '2024-02-20',
  '2024-02-29',
  '2023-02-29',
  '2024-02-30',
  '0000-00-00',
  '0001-01-01',
  '0070-01-01',
  '1969-12-31',
  '1970-01-01',
  '2106-02-07',
  '2106-02-08',
  '2200-01-01',
  '9999-12-31',
  '99999-01-01',
  '2024-1-5',
  '2024-01-05T00:00:00Z',
  '20240105',
  ' 2024-01-05',
  '-2024-01-05',
  '２０２４-01-05',
];
const SCORES = [
  '0',
  '-0',
  '10',
  '-1',
  '10.0',
  '6.1',
  '1e3',
  '.5',
  '5.',
  '+5',
  'NaN',
  'Infinity',
  '0x10',
  ' 5',
  '9'.repeat(400),
  `-${'9'.repeat(400)}`,
  `0.${'0'.repeat(400)}1`,
  '1.7976931348623157e309',
];
const PAGES = [
  '0',
  '1',
  '2',
  '5',
  '100',
  '101',
  '-1',
  '1.5',
  '1e3',
  'abc',
  '99999999999999999999999',
  '9007199254740993',
  ' 1',
  '01',
  '+1',
  '0x1',
];
const BOOLEANS = ['1', 't', 'T', 'true', 'TRUE', 'True', '0', 'f', 'F', 'false', 'FALSE', 'False', 'yes', 'TrUe', '2', ' true'];

/** Values by parameter name: the well-formed ones of each kind next to their near misses. */
function valueFor(name: string, ctx: FuzzContext): fc.Arbitrary<string> {
  const list = (items: fc.Arbitrary<string>) =>
    fc.oneof(
      { weight: 4, arbitrary: fc.array(items, { minLength: 1, maxLength: 4 }).map((a) => a.join(',')) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(items, fc.integer({ min: 50, max: 600 }))
          .map(([v, n]) => Array.from({ length: n }, (_, i) => `${v}${i}`).join(',')),
      },
      { weight: 1, arbitrary: fc.constantFrom(',', ',,,', ' , ') },
    );
  const known = (values: string[]) => fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...values) }, { weight: 2, arbitrary: oddString });
  switch (name) {
    case 'atDate':
    case 'minDate':
    case 'maxDate':
      return fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...DATES) },
        { weight: 2, arbitrary: fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)) },
        { weight: 1, arbitrary: oddString },
      );
    case 'minScore':
    case 'maxScore':
      return fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...SCORES) },
        { weight: 2, arbitrary: fc.double().map(String) },
        { weight: 1, arbitrary: oddString },
      );
    case 'page':
    case 'size':
      return fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...PAGES) },
        { weight: 1, arbitrary: fc.nat().map(String) },
        { weight: 1, arbitrary: oddString },
      );
    case 'identifiermatch':
    case 'includeSuppressed':
      return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...BOOLEANS) }, { weight: 1, arbitrary: oddString });
    case 'status':
      return known(['OPEN', 'FIXED', 'open', 'Open', 'OPEN ', 'CLOSED']);
    case 'sortBy':
      return known(['score', '-score', 'id', '-id', 'SCORE', 'score,id', 'time']);
    case 'sla':
      return known(['breached', 'within', 'BREACHED']);
    case 'decision':
      return known(['none', 'false_positive', 'accepted_risk', 'any', 'NONE']);
    case 'team':
      return known([...ctx.teams, ctx.tokens.memberTeam]);
    case 'teams':
      return list(known([...ctx.teams, ctx.tokens.memberTeam]));
    case 'identifier':
      return known(ctx.identifiers);
    case 'identifiers':
      return list(known(ctx.identifiers));
    case 'labels':
      return list(known(ctx.labels));
    default:
      return oddString;
  }
}

// Every findings-list parameter plus the statistics' switch: the fuzzer draws names the routes know.
const ALL_PARAMS = [...FINDING_LIST_PARAMS, 'includeSuppressed'];
const ODD_NAMES = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'page[]',
  'page[0]',
  'a[b]',
  'a.b',
  '',
  ' ',
  'PAGE',
  'Page',
  'status ',
  '%70age',
];

interface Query {
  text: string;
}

/** A query string: a few parameters the endpoint reads, others and odd ones, sometimes hundreds or thousands. */
function queryOf(params: readonly string[], ctx: FuzzContext): fc.Arbitrary<Query> {
  const name = fc.oneof(
    { weight: params.length > 0 ? 8 : 0, arbitrary: params.length > 0 ? fc.constantFrom(...params) : fc.constant('page') },
    { weight: 2, arbitrary: fc.constantFrom(...ALL_PARAMS) },
    { weight: 1, arbitrary: fc.oneof(fc.constantFrom(...ODD_NAMES), oddString) },
  );
  const pair = name.chain((n) =>
    fc.oneof(
      { weight: 12, arbitrary: encodedString(valueFor(n, ctx)).map((v) => `${percentEncode(n)}=${v}`) },
      { weight: 1, arbitrary: fc.constantFrom(`${n}`, `${n}=`, `=${n}`, `${n}==x`, `${n}=a=b`).map(rawEncode) },
    ),
  );
  const few = fc.array(pair, { maxLength: 6 }).map((pairs) => ({ text: pairs.join('&') }));
  const many = fc
    .tuple(fc.array(pair, { minLength: 1, maxLength: 5 }), fc.oneof(fc.integer({ min: 20, max: 300 }), fc.integer({ min: 250, max: 5000 })))
    .map(([pairs, n]) => {
      // No longer than a request target may be (withQuery cuts it to fit).
      const all: string[] = [];
      for (let i = 0, length = 0; i < n && length <= MAX_TARGET; i++) {
        const p = pairs[i % pairs.length]!;
        all.push(p);
        length += p.length + 1;
      }
      return { text: all.join('&') };
    });
  const odd = fc.constantFrom('&', '&&&', '=', '==', '?', '&=&', 'a&&&b', '%', '%zz=%zz', '%ED%A0%80=%ED%A0%80').map((text) => ({ text }));
  return fc.oneof({ weight: 14, arbitrary: few }, { weight: 2, arbitrary: many }, { weight: 1, arbitrary: odd });
}

/**
 * Node's HTTP parser refuses a request line and headers beyond 16 KiB (431, before the app sees it):
 * the query is cut to keep the request target within that.
 */
const MAX_TARGET = 15_600;
function withQuery(path: string, query: Query): string {
  if (path.length > MAX_TARGET) return path.slice(0, MAX_TARGET);
  if (query.text === '') return path;
  const room = MAX_TARGET - path.length - 1;
  if (room <= 0) return path;
  const cut = query.text.lastIndexOf('&', room);
  const text = query.text.length <= room ? query.text : query.text.slice(0, Math.max(cut, 0));
  return text === '' ? path : `${path}?${text}`;
}

/** Parameters in a request target as the APIs count them (non-empty `&` pieces, SPEC §5.6). */
export function paramCount(target: string): number {
  const q = target.indexOf('?');
  if (q < 0) return 0;
  return target
    .slice(q + 1)
    .split('&')
    .filter((p) => p !== '').length;
}

/** Trailing slashes: none mostly, a few, or thousands (SPEC §5.1 ignores them, §5.6 bounds their cost). */
const trailing = fc.oneof(
  { weight: 14, arbitrary: fc.constant('') },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }).map((n) => '/'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 15000 }).map((n) => '/'.repeat(n)) },
);

type IdKind = keyof FuzzContext['ids'];
const NON_UUIDS = [
  '1',
  'abc',
  'null',
  '00000000-0000-0000-0000-00000000000g',
  '00000000000000000000000000000000',
  '{00000000-0000-0000-0000-000000000000}',
  ' 00000000-0000-0000-0000-000000000000',
];

/** A path id: one that exists (of this kind or another), a random or nil UUID, upper case, or no UUID at all. */
function idOf(kind: IdKind, ctx: FuzzContext): fc.Arbitrary<{ text: string; clean: boolean }> {
  const all = Object.values(ctx.ids).flat();
  const clean = (a: fc.Arbitrary<string>) => a.map((text) => ({ text, clean: true }));
  return fc.oneof(
    { weight: 6, arbitrary: clean(fc.constantFrom(...ctx.ids[kind])) },
    { weight: 2, arbitrary: clean(fc.constantFrom(...all)) },
    { weight: 2, arbitrary: clean(fc.uuid()) },
    { weight: 1, arbitrary: clean(fc.constantFrom(...ctx.ids[kind]).map((id) => id.toUpperCase())) },
    { weight: 1, arbitrary: clean(fc.constantFrom('00000000-0000-0000-0000-000000000000', ...NON_UUIDS.map(percentEncode))) },
    { weight: 3, arbitrary: encodedString(oddString).map((text) => ({ text, clean: false })) },
  );
}

function fillPath(template: string, ctx: FuzzContext): fc.Arbitrary<{ path: string; clean: boolean }> {
  const parts = template.split(/(\{[a-z_]+\})/).filter((p) => p !== '');
  return fc
    .tuple(
      ...parts.map((p) => {
        const m = /^\{([a-z]+)_id\}$/.exec(p);
        if (m) return idOf(m[1] as IdKind, ctx);
        if (p === '{resource}') {
          return fc.oneof(
            { weight: 2, arbitrary: fc.constantFrom(...ctx.identifiers).map((text) => ({ text: percentEncode(text), clean: true })) },
            { weight: 1, arbitrary: encodedString(oddString).map((text) => ({ text, clean: text !== '' && !text.includes('%2F') })) },
          );
        }
        return fc.constant({ text: p, clean: true });
      }),
    )
    .map((filled) => ({ path: filled.map((f) => f.text).join(''), clean: filled.every((f) => f.clean) }));
}

// ----- the routes -----------------------------------------------------------------------------

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE'];

const METRIC_SCHEMAS: Record<string, z.ZodType> = {
  open_issues: openStatsResponse,
  fixed_issues: fixedStatsResponse,
  mttr: mttrStatsResponse,
  exposure: exposureStatsResponse,
  current_exposure: currentExposureStatsResponse,
  assets: assetStatsResponse,
};

/** Statuses a canonical path (no odd slashes) answers to `method` when it is not the route's own. */
function otherMethodStatus(method: string): readonly number[] | undefined {
  return method === 'HEAD' || method === 'OPTIONS' ? undefined : [405];
}

/** Requests to the database API's GET routes (every operation of src/openapi/operations.ts, /openapi.json, /docs). */
function dbReads(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const ops = [
    ...dbOperations
      .filter((o) => o.method === 'get')
      .map((o) => ({ path: o.path, params: o.params ?? [], schema: o.response as z.ZodType | undefined, canPost: o.path === '/targets' })),
    { path: '/openapi.json', params: [], schema: undefined, canPost: false },
    { path: '/docs', params: [], schema: undefined, canPost: false },
  ];
  return fc
    .record({
      op: fc.constantFrom(...ops),
      method: fc.oneof({ weight: 20, arbitrary: fc.constant('GET') }, { weight: 2, arbitrary: fc.constantFrom(...METHODS) }),
      trailing,
      jsonType: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      body: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: anyJson }),
      accept: fc.constantFrom(...ACCEPTS),
    })
    .chain((r) =>
      fc.tuple(fillPath(r.op.path, ctx), queryOf(r.op.params, ctx)).map(([path, query]) => {
        const target = withQuery(`${path.path}${r.trailing}`, query);
        const canonical = path.clean;
        const tooMany = paramCount(target) > 256;
        let expect: readonly number[] | undefined;
        if (canonical && r.method !== 'GET' && !(r.method === 'POST' && r.op.canPost)) expect = otherMethodStatus(r.method);
        if (canonical && r.method === 'GET' && r.op.path === '/healthcheck') expect = [200];
        // SPEC §5.6: 400 Too Many Parameters (before or after the method's 405, the SPEC does not say).
        if (tooMany && r.method === 'GET') expect = [400];
        else if (tooMany && expect) expect = [...expect, 400];
        const headers: Record<string, string> = {};
        if (r.accept !== '') headers.Accept = r.accept;
        if (r.jsonType) headers['Content-Type'] = 'application/json';
        const body = r.method === 'GET' || r.method === 'HEAD' ? (r.body !== undefined && r.method === 'GET' ? r.body : undefined) : r.body;
        return new FuzzRequest(
          'db',
          `${r.method === 'GET' ? 'GET' : 'other method'} ${r.op.path}`,
          r.method,
          target,
          headers,
          body,
          expect,
          canonical ? r.op.schema : undefined,
        );
      }),
    );
}

/** POST /checks and POST /targets with every kind of body and media type. */
function dbWrites(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const checks = reportBody.map((text) => ({ path: '/checks', text }));
  const targets = targetsBody(ctx).map((text) => ({ path: '/targets', text }));
  const body = fc.oneof(
    { weight: 8, arbitrary: fc.oneof({ weight: 3, arbitrary: checks }, { weight: 2, arbitrary: targets }) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('/checks', '/targets'), brokenBody).map(([path, text]) => ({ path, text })) },
  );
  return fc
    .record({
      body,
      type: contentType,
      trailing: fc.oneof({ weight: 10, arbitrary: fc.constant('') }, { weight: 1, arbitrary: trailing }),
      chunked: fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      // Whitespace around the document: in bulk it takes a body past MAX_REPORT_BYTES (413) or close to it.
      padding: fc.oneof(
        { weight: 400, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.constantFrom(ctx.maxReportBytes - 64, ctx.maxReportBytes + 1, ctx.maxReportBytes + 4096) },
      ),
      invalidUtf8: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    })
    .map((r) => {
      const headers: Record<string, string | string[]> = {};
      if (r.type.value !== undefined) headers['Content-Type'] = r.type.value;
      let payload: string | Buffer = r.body.text;
      if (r.padding > 0) payload = ' '.repeat(Math.max(0, r.padding - Buffer.byteLength(payload))) + payload;
      if (r.invalidUtf8) {
        // Raw bytes that are not UTF-8 inside the JSON strings (a client that does not encode its text).
        payload = Buffer.from(payload.replace(/x/g, '\u00ff').replace(/é/g, '\u00e9'), 'latin1');
      }
      const size = Buffer.byteLength(payload);
      // Bytes that are not UTF-8 may break the document's structure: only the media type and size are certain.
      const expect =
        r.invalidUtf8 && r.type.json && size <= ctx.maxReportBytes
          ? undefined
          : expectedWrite(r.body.path, r.body.text, r.type, size, ctx.maxReportBytes);
      return new FuzzRequest(
        'db',
        `POST ${r.body.path}`,
        'POST',
        `${r.body.path}${r.trailing}`,
        headers,
        payload,
        expect,
        undefined,
        r.chunked,
      );
    });
}

/** What the SPEC makes certain about a write (§3.1, §5.2, §6.6): media type, size, syntax, then the rules. */
function expectedWrite(path: string, text: string, type: ContentType, size: number, limit: number): readonly number[] | undefined {
  if (!type.json) return [415];
  if (size > limit) return [413];
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return [400];
  }
  if (path === '/checks') {
    // Validation is the service's own business; what is certain is that any valid report is accepted
    // whatever text it holds (§3.3 item 6) and that a report that is no object or has no string status is not.
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return [400];
    const status = (data as Record<string, unknown>).status;
    if (typeof status !== 'string') return [400];
    if (status !== 'FINISHED') return [202];
    return checkReport(data).kind === 'invalid' ? [400] : [202];
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [400];
  const { identifier, teams } = data as Record<string, unknown>;
  if (identifier != null && typeof identifier !== 'string') return [400];
  if (teams != null && !(Array.isArray(teams) && teams.every((t) => typeof t === 'string'))) return [400];
  // Lengths in characters (code points; an unpaired surrogate is one, as the U+FFFD it becomes).
  const chars = (t: string) => [...t].length;
  if (!identifier) return [422];
  if (chars(identifier) > 2048) return [422];
  const list = (teams ?? []) as string[];
  if (list.some((t) => t === '' || chars(t) > 256) || list.length > 100) return [422];
  // 422 too: the campaign gives its few identifiers random teams, and a target holds at most 1,000.
  return [201, 422];
}

/** The metrics API: every metric per team and globally, the health check, with good, wrong and no tokens. */
function metricsRequests(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const team = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom(ctx.tokens.memberTeam, ...ctx.teams).map((text) => ({ text: percentEncode(text), clean: true })),
    },
    { weight: 2, arbitrary: fc.uuid().map((text) => ({ text, clean: true })) },
    { weight: 2, arbitrary: encodedString(oddString).map((text) => ({ text, clean: false })) },
  );
  const bearer = fc.oneof(
    { weight: 5, arbitrary: fc.constant({ header: `Bearer ${ctx.tokens.admin}`, kind: 'admin' }) },
    { weight: 4, arbitrary: fc.constant({ header: `Bearer ${ctx.tokens.member}`, kind: 'member' }) },
    { weight: 1, arbitrary: fc.constant({ header: undefined, kind: 'none' }) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom(...ctx.tokens.refused).map((t) => `Bearer ${t}`),
          fc.constantFrom(
            'Bearer',
            'Bearer ',
            'Basic YWxpY2U6c2VjcmV0',
            `Bearer ${ctx.tokens.admin}x`,
            'Bearer %ED%A0%80',
            `Token ${ctx.tokens.admin}`,
          ),
        )
        .map((header) => ({ header, kind: 'refused' })),
    },
    // The scheme is case-insensitive (RFC 9110); odd spacing is the verifier's call.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          `bearer ${ctx.tokens.admin}`,
          `Bearer ${ctx.tokens.odd}`,
          `BEARER ${ctx.tokens.member}`,
          `Bearer  ${ctx.tokens.admin}`,
          ` Bearer ${ctx.tokens.admin}`,
        )
        .map((header) => ({ header, kind: 'odd' })),
    },
  );
  const metric = fc.constantFrom(...METRICS);
  const route = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.tuple(metric, team).map(([m, t]) => ({
        route: `/teams/{team_id}/${m.path}`,
        path: `/teams/${t.text}/${m.path}`,
        clean: t.clean,
        params: m.params,
        metric: m as (typeof METRICS)[number] | undefined,
      })),
    },
    {
      weight: 4,
      arbitrary: metric.map((m) => ({
        route: `/${m.path}`,
        path: `/${m.path}`,
        clean: true,
        params: [...m.params, 'teams'] as readonly string[],
        metric: m as (typeof METRICS)[number] | undefined,
      })),
    },
    {
      weight: 1,
      arbitrary: fc.constant({
        route: '/healthcheck',
        path: '/healthcheck',
        clean: true,
        params: [] as readonly string[],
        metric: undefined,
      }),
    },
  );
  return fc
    .record({
      route,
      bearer,
      method: fc.oneof({ weight: 20, arbitrary: fc.constant('GET') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      trailing,
    })
    .chain((r) =>
      queryOf(r.route.params, ctx).map((query) => {
        const headers: Record<string, string> = {};
        if (r.bearer.header !== undefined) headers.Authorization = r.bearer.header;
        const target = withQuery(`/api/v1${r.route.path}${r.trailing}`, query);
        const tooMany = paramCount(target) > 256;
        let expect: readonly number[] | undefined;
        if (r.route.clean && r.method !== 'GET') expect = otherMethodStatus(r.method);
        else if (r.route.clean && r.route.metric && (r.bearer.kind === 'none' || r.bearer.kind === 'refused')) expect = [401];
        // SPEC §5.6, §8.2: authentication first, then (an admin passes authorization) 422 for too many parameters.
        else if (r.route.clean && r.route.metric && r.bearer.kind === 'admin' && tooMany) expect = [422];
        else if (r.route.route === '/healthcheck' && r.method === 'GET' && !tooMany) expect = [200];
        const schema = r.route.clean && r.route.metric ? METRIC_SCHEMAS[r.route.metric.key] : undefined;
        return new FuzzRequest(
          'metrics',
          `${r.method === 'GET' ? 'GET' : 'other method'} ${r.route.route}`,
          r.method,
          target,
          headers,
          undefined,
          expect,
          schema,
        );
      }),
    );
}

/** Paths that are no route: unknown words, slashes in bulk, encoded oddities, both APIs. */
function unknownPaths(): fc.Arbitrary<FuzzRequest> {
  const segment = fc.oneof(
    { weight: 3, arbitrary: oddString.map((s) => `zz${percentEncode(s)}`) },
    { weight: 1, arbitrary: fc.constantFrom('zz', 'zz%2Ffindings', 'zz..', 'zz%00', 'zz%ED%A0%80') },
  );
  return fc
    .record({
      api: fc.constantFrom<Api>('db', 'metrics'),
      prefix: fc.constantFrom('', '/findings', '/stats', '/api/v1', '/api/v1/teams'),
      slashes: fc.oneof({ weight: 6, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 15000 }) }),
      // Two segments at least: /findings/zz would be GET /findings/{finding_id}.
      segments: fc.array(segment, { minLength: 2, maxLength: 4 }),
      method: fc.constantFrom(...METHODS),
      end: fc.constantFrom('', '/', 'x/', '?a=1'),
    })
    .map((r) => {
      const target = `${r.prefix}${'/'.repeat(r.slashes)}${r.segments.join('/')}`.slice(0, MAX_TARGET) + r.end;
      return new FuzzRequest(r.api, `${r.method} (unknown path)`, r.method, target, {}, undefined, [404], undefined);
    });
}

/** `bodies`: the decision, webhook and import write surfaces (test/support/fuzz-bodies.ts). */
export const REQUEST_KINDS = ['reads', 'writes', 'metrics', 'unknown', 'bodies'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** Every kind of request (or only some), in proportions that keep the store busy without starving the rest. */
export function fuzzRequest(ctx: FuzzContext, only: readonly RequestKind[] = REQUEST_KINDS): fc.Arbitrary<FuzzRequest> {
  const db = (a: fc.Arbitrary<FuzzRequest>) => (ctx.dbAuth ? withDbToken(a, ctx) : a);
  const kinds: { weight: number; arbitrary: fc.Arbitrary<FuzzRequest> }[] = [];
  if (only.includes('reads')) kinds.push({ weight: 9, arbitrary: db(dbReads(ctx)) });
  if (only.includes('writes')) kinds.push({ weight: 5, arbitrary: db(dbWrites(ctx)) });
  if (only.includes('metrics')) kinds.push({ weight: 4, arbitrary: metricsRequests(ctx) });
  if (only.includes('unknown')) kinds.push({ weight: 1, arbitrary: db(unknownPaths()) });
  if (only.includes('bodies')) {
    kinds.push({ weight: 1, arbitrary: decisionRequests(ctx) });
    kinds.push({ weight: 1, arbitrary: webhookRequests(ctx) });
    kinds.push({ weight: 1, arbitrary: db(importRequests(ctx)) });
  }
  return fc.oneof(...kinds);
}

/** Open without a token under DB_API_AUTH=jwt (src/auth/db-api.ts). */
const OPEN_DB_PATHS = new Set(['/healthcheck', '/openapi.json', '/docs']);
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A database API request with a bearer token (DB_API_AUTH=jwt, SPEC §5.1): the limit on parameters
 * first, then no or a refused token is 401 on every path but the open ones (before routing, unknown
 * paths too), then a write by a caller without admin or the ingest scope is 403.
 */
function withDbToken(requests: fc.Arbitrary<FuzzRequest>, ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const t = ctx.tokens;
  const bearer = fc.oneof(
    { weight: 4, arbitrary: fc.constant({ header: `Bearer ${t.admin}`, kind: 'writer' }) },
    { weight: 2, arbitrary: fc.constant({ header: `Bearer ${t.ingest}`, kind: 'writer' }) },
    { weight: 3, arbitrary: fc.constantFrom(`Bearer ${t.member}`, `Bearer ${t.odd}`).map((header) => ({ header, kind: 'reader' })) },
    { weight: 1, arbitrary: fc.constant({ header: undefined, kind: 'refused' }) },
    { weight: 2, arbitrary: fc.constantFrom(...t.refused, '').map((token) => ({ header: `Bearer ${token}`, kind: 'refused' })) },
  );
  return fc.tuple(requests, bearer).map(([r, b]) => {
    if (r.api !== 'db') return r;
    const full = r.target.split('?')[0]!;
    let end = full.length;
    while (end > 1 && full[end - 1] === '/') end--; // not /\/+$/, quadratic on runs of slashes
    const path = full.slice(0, end);
    let expect = r.expect;
    if (paramCount(r.target) > 256 || OPEN_DB_PATHS.has(path)) expect = r.expect;
    else if (b.kind === 'refused') expect = [401];
    else if (b.kind === 'reader' && !READ_METHODS.has(r.method)) expect = [403];
    const headers = b.header === undefined ? r.headers : { ...r.headers, Authorization: b.header };
    return new FuzzRequest(r.api, r.route, r.method, r.target, headers, r.body, expect, r.schema, r.chunked);
  });
}

// ---------------------------------------------------------------------------------------------
// Sending and checking
// ---------------------------------------------------------------------------------------------

export interface Answer {
  status: number;
  contentType: string | undefined;
  body: Buffer;
  ms: number;
}

export interface Client {
  send(req: FuzzRequest): Promise<Answer>;
  close(): void;
}

/** A keep-alive client of both APIs that writes request targets unchanged. */
export function fuzzClient(urls: Record<Api, string>, opts: { sockets: number; timeoutMs: number }): Client {
  // Idle sockets are dropped after 4 s, before the server's keep-alive timeout (5 s) closes them.
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.sockets, timeout: 4000 });
  const bases = {
    db: new URL(urls.db),
    metrics: new URL(urls.metrics),
  };
  const once = (req: FuzzRequest) =>
    new Promise<Answer>((resolve, reject) => {
      const base = bases[req.api];
      const started = performance.now();
      const headers: Record<string, string | string[] | number> = { ...req.headers };
      if (req.body !== undefined && !req.chunked) headers['Content-Length'] = Buffer.byteLength(req.body);
      const r = http.request(
        {
          agent,
          host: base.hostname,
          port: base.port,
          method: req.method,
          path: req.target.startsWith('/') ? req.target : `/${req.target}`,
          headers,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              contentType: res.headers['content-type'],
              body: Buffer.concat(chunks),
              ms: performance.now() - started,
            }),
          );
          res.on('error', reject);
        },
      );
      r.setTimeout(opts.timeoutMs, () => r.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
      r.on('error', (err: NodeJS.ErrnoException) => reject(Object.assign(err, { reused: r.reusedSocket })));
      if (req.body === undefined) r.end();
      else if (req.chunked) {
        const buf = Buffer.from(req.body);
        const half = buf.length >> 1;
        r.write(buf.subarray(0, half));
        r.end(buf.subarray(half));
      } else r.end(req.body);
    });
  // A kept-alive socket the server closed as idle (5 s, e.g. while a batch waited for its slowest
  // request on a loaded machine) just as the next request went out: Node's documented race, in which
  // the server never read the request. Sent again, on another socket.
  const send = async (req: FuzzRequest): Promise<Answer> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(req);
      } catch (e) {
        const err = e as NodeJS.ErrnoException & { reused?: boolean };
        const race = err.reused && (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'socket hang up');
        if (!race || attempt === 3) throw err;
      }
    }
  };
  return { send, close: () => agent.destroy() };
}

const metricsErrorSchema = {
  safeParse(v: unknown, status: number): boolean {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
    const o = v as Record<string, unknown>;
    return (
      Object.keys(o).sort().join(',') === 'code,error,type' &&
      o.code === status &&
      typeof o.error === 'string' &&
      typeof o.type === 'string'
    );
  },
};

/** What is wrong with an answer, if anything (a short text that groups equal failures). */
export function problemsOf(req: FuzzRequest, a: Answer): string[] {
  const problems: string[] = [];
  if (a.status >= 500) problems.push(`status ${a.status}`);
  if (req.expect && !req.expect.includes(a.status)) problems.push(`status ${a.status}, SPEC: ${req.expect.join(' or ')}`);
  const isDocs = req.api === 'db' && a.status === 200 && /^\/docs\/*(\?|$)/.test(req.target);
  // 204 No Content (e.g. DELETE of a decision or a webhook) has no body by definition.
  const bodyless = req.method === 'HEAD' || (req.method === 'OPTIONS' && a.status < 300 && a.body.length === 0) || a.status === 204;
  if (bodyless) return problems;
  // /docs/ (any trailing slashes) redirects to /docs, where Swagger UI's page is served.
  const docsRedirect = req.api === 'db' && a.status === 301 && /^\/docs\/+(\?|$)/.test(req.target);
  if (docsRedirect) return problems;
  if (isDocs) {
    if (!/^text\/html/.test(a.contentType ?? '')) problems.push(`content type ${a.contentType} for /docs`);
    return problems;
  }
  if (!/^application\/json; charset=utf-8$/i.test(a.contentType ?? '')) problems.push(`content type ${a.contentType ?? '(none)'}`);
  let body: unknown;
  try {
    body = JSON.parse(a.body.toString('utf8'));
  } catch {
    problems.push('body is not JSON');
    return problems;
  }
  if (a.status >= 400) {
    const ok = req.api === 'db' ? errorBodySchema.safeParse(body).success : metricsErrorSchema.safeParse(body, a.status);
    if (!ok) problems.push(`error body ${req.api === 'db' ? 'not {"message"}' : 'not {"code","error","type"}'}`);
  } else if (a.status >= 200 && a.status < 300 && req.schema) {
    const parsed = req.schema.safeParse(body);
    if (!parsed.success) problems.push(`${a.status} body does not match its schema: ${parsed.error.issues[0]?.message}`);
  }
  return problems;
}

/** Writes the campaign made, for the checks after it. */
export interface Ledger {
  /** Job ids of accepted reports (202). */
  jobs: string[];
  /** Target ids of 201 answers. */
  targets: Set<string>;
  requests: number;
  byStatus: Map<number, number>;
  slowest: { ms: number; req: string }[];
  /** Time spent answering, by route and status class. */
  time: Map<string, { n: number; ms: number }>;
}

export const newLedger = (): Ledger => ({ jobs: [], targets: new Set(), requests: 0, byStatus: new Map(), slowest: [], time: new Map() });

function record(ledger: Ledger, req: FuzzRequest, a: Answer): void {
  ledger.requests++;
  ledger.byStatus.set(a.status, (ledger.byStatus.get(a.status) ?? 0) + 1);
  const kind = `${req.route} ${Math.floor(a.status / 100)}xx`;
  const t = ledger.time.get(kind) ?? { n: 0, ms: 0 };
  t.n++;
  t.ms += a.ms;
  ledger.time.set(kind, t);
  if (ledger.slowest.length < 5 || a.ms > ledger.slowest[ledger.slowest.length - 1]!.ms) {
    ledger.slowest.push({ ms: Math.round(a.ms), req: String(req[fc.toStringMethod]()).slice(0, 200) });
    ledger.slowest.sort((x, y) => y.ms - x.ms).splice(5);
  }
  if (req.method !== 'POST' || a.status >= 300) return;
  try {
    const body = JSON.parse(a.body.toString('utf8')) as { job_id?: unknown; job_ids?: unknown; target?: { id?: unknown } };
    if (a.status === 202 && typeof body.job_id === 'string') ledger.jobs.push(body.job_id);
    // POST /imports/{format}: a job per report of the document.
    if (a.status === 202 && Array.isArray(body.job_ids)) ledger.jobs.push(...body.job_ids.filter((j) => typeof j === 'string'));
    if (a.status === 201 && typeof body.target?.id === 'string') ledger.targets.add(body.target.id);
  } catch {
    /* reported by problemsOf */
  }
}

export interface Failure {
  key: string;
  req: FuzzRequest;
  status: number;
  body: string;
}

/** Sends a batch at once; returns the failures (problem text, request, answer). */
export async function sendBatch(client: Client, batch: FuzzRequest[], ledger: Ledger): Promise<Failure[]> {
  const answers = await Promise.all(
    batch.map((req) =>
      client.send(req).then(
        (a) => ({ req, a }),
        (err: Error) => ({ req, a: undefined, err }),
      ),
    ),
  );
  const failures: Failure[] = [];
  for (const x of answers) {
    if (!x.a) {
      failures.push({ key: `${x.req.route}: no answer (${'err' in x ? x.err.message : ''})`, req: x.req, status: 0, body: '' });
      continue;
    }
    record(ledger, x.req, x.a);
    const problems = problemsOf(x.req, x.a);
    if (problems.length > 0)
      failures.push({
        key: `${x.req.route}: ${problems.join('; ')}`,
        req: x.req,
        status: x.a.status,
        body: x.a.body.toString('utf8').slice(0, 300),
      });
  }
  return failures;
}

// ---------------------------------------------------------------------------------------------
// After the campaign: what the accepted reports left in the queue
// ---------------------------------------------------------------------------------------------

const REPORT_KEYS = new Set([
  'status',
  'check_id',
  'checktype_name',
  'checktype_version',
  'target',
  'options',
  'tag',
  'start_time',
  'end_time',
  'vulnerabilities',
]);
const VULNERABILITY_KEYS = new Set([
  'summary',
  'description',
  'score',
  'cwe_id',
  'recommendations',
  'references',
  'labels',
  'details',
  'impact_details',
  'resources',
  'affected_resource',
  'affected_resource_string',
  'fingerprint',
]);
const RESOURCE_KEYS = new Set(['name', 'header', 'rows']);

function allWellFormed(v: unknown): boolean {
  if (typeof v === 'string') return v.isWellFormed();
  if (typeof v !== 'object' || v === null) return true;
  if (Array.isArray(v)) return v.every(allWellFormed);
  return Object.entries(v).every(([k, x]) => k.isWellFormed() && allWellFormed(x));
}

/** Why a job's data is not a validated report (SPEC §3.1: the fields of §3.2 only), or undefined. */
export function jobDataProblem(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'not an object';
  const d = data as Record<string, unknown>;
  if (!allWellFormed(d)) return 'holds an unpaired surrogate';
  if (d.status !== 'FINISHED') {
    return typeof d.status === 'string' && Object.keys(d).join() === 'status'
      ? undefined
      : `a non-FINISHED job carries ${Object.keys(d).join(',')}`;
  }
  const extra = Object.keys(d).filter((k) => !REPORT_KEYS.has(k));
  if (extra.length > 0) return `fields beyond SPEC §3.2: ${extra.join(',')}`;
  const verdict = checkReport(d);
  if (verdict.kind !== 'finished') return `not a valid report: ${verdict.kind === 'invalid' ? verdict.reason : verdict.kind}`;
  for (const v of (d.vulnerabilities ?? []) as Record<string, unknown>[]) {
    const more = Object.keys(v).filter((k) => !VULNERABILITY_KEYS.has(k));
    if (more.length > 0) return `vulnerability fields beyond SPEC §3.2: ${more.join(',')}`;
    for (const g of (v.resources ?? []) as Record<string, unknown>[]) {
      const odd = Object.keys(g).filter((k) => !RESOURCE_KEYS.has(k));
      if (odd.length > 0) return `resource group fields beyond name/header/rows: ${odd.join(',')}`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The campaign
// ---------------------------------------------------------------------------------------------

export interface CampaignOptions {
  client: Client;
  ctx: FuzzContext;
  /** Requests to generate (rounded up to whole batches). */
  requests: number;
  seed: number;
  /** Requests sent at once. */
  batch: number;
  /** fast-check replay path of a counterexample (assert mode). */
  path?: string | undefined;
  ledger: Ledger;
  log?: (line: string) => void;
  only?: readonly RequestKind[];
}

const describeFailures = (failures: Failure[]) =>
  failures.map((f) => `  ${f.key}\n    request: ${String(f.req[fc.toStringMethod]())}\n    answer: ${f.status} ${f.body}`).join('\n');

/**
 * fast-check runs batches of requests until one answer fails its checks, then shrinks the batch to
 * the failing request and reports it with the seed and path that replay it.
 */
export async function assertCampaign(o: CampaignOptions): Promise<void> {
  const numRuns = Math.ceil(o.requests / o.batch);
  const property = fc.asyncProperty(fc.array(fuzzRequest(o.ctx, o.only), { minLength: o.batch, maxLength: o.batch }), async (batch) => {
    const failures = await sendBatch(o.client, batch, o.ledger);
    if (failures.length > 0) throw new Error(`answers off the SPEC:\n${describeFailures(failures)}`);
  });
  await fc.assert(property, {
    seed: o.seed,
    numRuns,
    ...(o.path !== undefined ? { path: o.path } : {}),
    // Shrinking re-sends requests: bounded, the first counterexample is already reproducible.
    interruptAfterTimeLimit: 10 * 60_000,
    markInterruptAsFailure: true,
  });
}

export interface FailureClass {
  key: string;
  count: number;
  example: Failure;
  /** fast-check path of the first batch that showed it (replay with the campaign's seed). */
  path: string;
}

/** Runs the whole campaign and collects every distinct failure with the path of its first batch. */
export async function collectCampaign(o: CampaignOptions): Promise<FailureClass[]> {
  const numRuns = Math.ceil(o.requests / o.batch);
  const classes = new Map<string, FailureClass>();
  let run = 0;
  const property = fc.asyncProperty(fc.array(fuzzRequest(o.ctx, o.only), { minLength: o.batch, maxLength: o.batch }), async (batch) => {
    const path = String(run++);
    for (const f of await sendBatch(o.client, batch, o.ledger)) {
      const c = classes.get(f.key);
      if (c) c.count++;
      else {
        classes.set(f.key, { key: f.key, count: 1, example: f, path });
        o.log?.(`new failure at path ${path}: ${f.key}`);
      }
    }
    if (run % 100 === 0) o.log?.(`${o.ledger.requests} requests, ${classes.size} distinct failures`);
    return true;
  });
  await fc.check(property, { seed: o.seed, numRuns });
  return [...classes.values()].sort((a, b) => b.count - a.count);
}

export const describeClasses = (seed: number, classes: FailureClass[]) =>
  classes
    .map(
      (c) =>
        `${c.count}× ${c.key}\n    replay: seed ${seed}, path "${c.path}"\n    request: ${String(c.example.req[fc.toStringMethod]()).slice(0, 600)}\n    answer: ${c.example.status} ${c.example.body}`,
    )
    .join('\n');

// ---------------------------------------------------------------------------------------------
// The service under test: the API test catalog (test/support/api-catalog.ts) and the checks after
// ---------------------------------------------------------------------------------------------

/** The JWT_SECRET the fuzzed service runs with. */
export const FUZZ_SECRET = 'fuzz-campaign-secret-0123456789abcdef-0123456789';

/** What exists once the catalog is loaded. */
export function fuzzContext(maxReportBytes: number): FuzzContext {
  const targets = [T1, T2, T3, T4];
  return {
    ids: {
      finding: [...findings.map((f) => f.id), fid(T4, I1)],
      issue: [I1, I2, I3, I4, I5].map(iid),
      target: targets.map(tid),
      source: reports.map((r) => sid(String(r.check_id))),
    },
    identifiers: targets,
    teams: [TEAM_A, TEAM_B],
    labels: ['web', 'owasp', 'network', 'patch'],
    tokens: fuzzTokens(FUZZ_SECRET, TEAM_A),
    maxReportBytes,
  };
}

export type SizeStats = Record<'sources' | 'targets' | 'issues' | 'findings' | 'finding_events', number>;

export async function sizeOf(db: (path: string) => Promise<Response>): Promise<SizeStats> {
  const res = await db('/stats/size');
  if (res.status !== 200) throw new Error(`/stats/size answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { size: SizeStats }).size;
}

/**
 * After a campaign against a service whose workers are stopped: the store holds what it held
 * before plus the targets POST /targets created (201 with an id the catalog did not hold), nothing
 * of rejected writes nor of reports still queued. Returns what is wrong, if anything.
 */
export async function sizeProblem(db: (path: string) => Promise<Response>, ledger: Ledger, before: SizeStats): Promise<string | undefined> {
  const after = await sizeOf(db);
  const known = new Set(fuzzContext(0).ids.target);
  const created = [...ledger.targets].filter((t) => !known.has(t)).length;
  const expected = { ...before, targets: before.targets + created };
  if (JSON.stringify(after) === JSON.stringify(expected)) return undefined;
  return `/stats/size is ${JSON.stringify(after)}, expected ${JSON.stringify(expected)} (before ${JSON.stringify(before)}, ${created} targets created)`;
}

/**
 * The queue holds exactly one job per accepted report (202), each a validated report (SPEC §3.1:
 * the fields of §3.2 only, unpaired surrogates made U+FFFD). Returns what is wrong.
 */
export async function queueProblems(queue: Queue, ledger: Ledger): Promise<string[]> {
  const problems: string[] = [];
  const counts = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed');
  const queued = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
  const catalog = reports.length;
  if (queued !== ledger.jobs.length)
    problems.push(
      `${queued} jobs wait in the queue for ${ledger.jobs.length} accepted reports (${JSON.stringify(counts)}; the catalog's ${catalog} completed before)`,
    );
  for (let i = 0; i < ledger.jobs.length; i += 100) {
    const ids = ledger.jobs.slice(i, i + 100);
    const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
    for (const [k, job] of jobs.entries()) {
      if (!job) {
        problems.push(`job ${ids[k]} of a 202 is not in the queue`);
        continue;
      }
      const problem = jobDataProblem(job.data);
      if (problem) problems.push(`job ${ids[k]}: ${problem}: ${JSON.stringify(job.data).slice(0, 300)}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Then: the accepted reports ingested, and reads over what they stored
// ---------------------------------------------------------------------------------------------

/**
 * Starts ingest workers on the service's batcher (its own stopped before the campaign), waits until
 * both queues are empty and returns them with why jobs failed: SPEC §3.3 item 6, no accepted report
 * is rejected or made to fail for the text it holds. Close the workers when done.
 */
export async function ingestQueued(svc: {
  batcher: ReportBatcher;
  queue: Queue;
  names: RedisNames;
  config: Pick<Config, 'redisUrl' | 'ingest' | 'jobs'>;
  log: Logger;
  settle: (timeoutMs?: number) => Promise<void>;
}): Promise<{ workers: Worker[]; failed: string[]; close: () => Promise<void> }> {
  const connection = workerConnection(svc.config.redisUrl);
  const workers = startIngestWorkers({
    connection,
    names: svc.names,
    batcher: svc.batcher,
    reportsInFlight: svc.config.ingest.batchSize * svc.config.ingest.concurrency,
    jobs: svc.config.jobs,
    log: svc.log,
  });
  const close = async () => {
    await Promise.all(workers.map((w) => w.close()));
    await connection.quit();
  };
  await svc.settle(300_000);
  const failed = (await svc.queue.getFailed(0, 50)).map((j) => `job ${j.id}: ${j.failedReason}: ${JSON.stringify(j.data).slice(0, 300)}`);
  return { workers, failed, close };
}

/** The context with the ids, identifiers and labels of the first pages of every list added (what ingestion stored). */
export async function withStoredIds(ctx: FuzzContext, db: (path: string) => Promise<Response>): Promise<FuzzContext> {
  const list = async <T>(path: string, key: string): Promise<T[]> => {
    const res = await db(`${path}?size=100`);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as Record<string, T[]>)[key]!;
  };
  const findings = await list<{ id: string }>('/findings', 'findings');
  const issues = await list<{ id: string; labels: string[] }>('/issues', 'issues');
  const targets = await list<{ id: string; identifier: string; teams: string[] }>('/targets', 'targets');
  const sources = await list<{ id: string }>('/sources', 'sources');
  const more = (known: string[], found: string[]) => [...new Set([...known, ...found])];
  return {
    ...ctx,
    ids: {
      finding: more(
        ctx.ids.finding,
        findings.map((f) => f.id),
      ),
      issue: more(
        ctx.ids.issue,
        issues.map((i) => i.id),
      ),
      target: more(
        ctx.ids.target,
        targets.map((t) => t.id),
      ),
      source: more(
        ctx.ids.source,
        sources.map((x) => x.id),
      ),
    },
    identifiers: more(
      ctx.identifiers,
      targets.map((t) => t.identifier),
    ).slice(0, 200),
    teams: more(
      ctx.teams,
      targets.flatMap((t) => t.teams),
    ).slice(0, 200),
    labels: more(
      ctx.labels,
      issues.flatMap((i) => i.labels),
    ).slice(0, 200),
  };
}
