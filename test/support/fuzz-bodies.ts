import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { decisionResponse, decisionsResponse } from '../../src/decisions/schema.js';
import { EVENT_TYPES } from '../../src/queue/contract.js';
import {
  anyJson,
  brokenBody,
  type ContentType,
  contentType,
  definedEntries,
  field,
  type FuzzContext,
  FuzzRequest,
  hugeString,
  objectText,
  oddString,
  percentEncode,
  str,
} from './fuzz-requests.js';

/**
 * Issue 31: the fuzz campaign's requests to the write surfaces beyond POST /checks and POST
 * /targets — decisions (PUT/DELETE, the audit trail), webhook subscriptions and imports — with lone
 * surrogates and NULs in every string, huge and repeated fields, deep nesting and wrong types
 * (imports: test/support/fuzz-imports.ts).
 * Decisions mostly aim at one finding, so a batch's concurrent requests write on it side by side;
 * `decisionProblems` checks afterwards that they took effect one after another (SPEC §12.3).
 *
 * Every arbitrary is built when called: this module and fuzz-requests.ts import each other.
 * Nothing here imports vitest: the runner uses it outside the test runner.
 */

/** What a write surface's strings hold: plain words mostly, odd strings (lone surrogates, NULs), rarely huge. */
export const text = () =>
  fc.oneof(
    { weight: 20, arbitrary: fc.constantFrom('x', 'The panel is a honeypot.', 'fixed in 1.2.3', 'a\u0000b', 'bad \ud83d text') },
    { weight: 20, arbitrary: oddString },
    { weight: 1, arbitrary: hugeString },
  );

/** The bearer of a metrics API request and what the SPEC makes it (§8.1). */
type Bearer = { header: string | undefined; kind: 'admin' | 'member' | 'stranger' | 'refused' };
const bearer = (ctx: FuzzContext): fc.Arbitrary<Bearer> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(ctx.tokens.admin, ctx.tokens.oddSub).map((t) => ({ header: `Bearer ${t}`, kind: 'admin' as const })),
    },
    { weight: 2, arbitrary: fc.constant({ header: `Bearer ${ctx.tokens.member}`, kind: 'member' as const }) },
    { weight: 1, arbitrary: fc.constant({ header: `Bearer ${ctx.tokens.odd}`, kind: 'stranger' as const }) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constant(undefined),
          fc.constantFrom(...ctx.tokens.refused).map((t) => `Bearer ${t}`),
        )
        .map((header) => ({ header, kind: 'refused' as const })),
    },
  );

/** A JSON body at most this large reaches validation on the metrics API's write routes. */
const METRICS_BODY_LIMIT = 64 * 1024;

/** Statuses a metrics API write may answer once the caller may write: media type, size, then the rules. */
function bodyStatuses(type: ContentType, body: string, rules: readonly number[]): readonly number[] {
  if (!type.json) return [415];
  if (Buffer.byteLength(body) > METRICS_BODY_LIMIT) return [413];
  return rules;
}

const daysAhead = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

/** A PUT decision body: every field valid, odd, absent, repeated or of another type. */
const decisionBody = () => {
  const decision = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('false_positive', 'accepted_risk').map(str) },
    { weight: 1, arbitrary: oddString.map(str) },
  );
  const reason = fc.oneof(
    { weight: 8, arbitrary: text().map(str) },
    { weight: 1, arbitrary: fc.integer({ min: 1998, max: 2002 }).map((n) => str('r'.repeat(n))) },
  );
  const expires = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 1, max: 400 }).map((d) => str(daysAhead(d))) },
    { weight: 1, arbitrary: fc.constantFrom('2024-01-01T00:00:00Z', '2999-02-30T00:00:00Z', 'tomorrow', '').map(str) },
    { weight: 1, arbitrary: oddString.map(str) },
  );
  const record = fc
    .record({
      decision: field(decision, 20),
      reason: field(reason, 20),
      expires_at: field(expires, 6),
      extra: fc.array(fc.tuple(fc.constantFrom('decision', 'reason', 'expires_at', 'by', 'id'), anyJson), { maxLength: 2 }),
      shuffle: fc.boolean(),
    })
    .map(({ extra, shuffle, ...fields }) => {
      const entries = definedEntries(fields);
      return objectText(shuffle ? [...extra, ...entries] : [...entries, ...extra]);
    });
  return fc.oneof({ weight: 12, arbitrary: record }, { weight: 1, arbitrary: anyJson }, { weight: 1, arbitrary: brokenBody });
};

/** Decisions on the catalog's findings (mostly the first: concurrency on one finding), unknown ids and non-ids. */
export function decisionRequests(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const hot = ctx.ids.finding[0]!;
  const id = fc.oneof(
    { weight: 8, arbitrary: fc.constant({ text: hot, known: true as boolean | undefined }) },
    { weight: 2, arbitrary: fc.constantFrom(...ctx.ids.finding.slice(1)).map((text) => ({ text, known: undefined })) },
    { weight: 1, arbitrary: fc.uuid().map((text) => ({ text, known: false as boolean | undefined })) },
    { weight: 1, arbitrary: oddString.map((s) => ({ text: `zz${percentEncode(s).slice(0, 2000)}`, known: false as boolean | undefined })) },
  );
  return fc
    .record({
      id,
      bearer: bearer(ctx),
      method: fc.oneof(
        { weight: 8, arbitrary: fc.constant('PUT') },
        { weight: 2, arbitrary: fc.constant('DELETE') },
        { weight: 1, arbitrary: fc.constant('GET') },
      ),
      body: decisionBody(),
      type: contentType,
    })
    .map((r) => {
      const route = r.method === 'GET' ? '/findings/{finding_id}/decisions' : '/findings/{finding_id}/decision';
      const path = `/api/v1${route.replace('{finding_id}', r.id.text)}`;
      const headers: Record<string, string | string[]> = {};
      if (r.bearer.header !== undefined) headers.Authorization = r.bearer.header;
      if (r.method === 'PUT' && r.type.value !== undefined) headers['Content-Type'] = r.type.value;
      const body = r.method === 'PUT' ? r.body : undefined;
      const { expect, schema } = decisionExpectation(r.method, r.id.known, r.bearer.kind, r.type, body ?? '');
      return new FuzzRequest('metrics', `${r.method} /api/v1${route}`, r.method, path, headers, body, expect, schema);
    });
}

/** SPEC §12.3 and §8.2's order: 401, then the finding (404 for what the caller may not see), then the body. */
function decisionExpectation(method: string, known: boolean | undefined, who: Bearer['kind'], type: ContentType, body: string) {
  const schema = method === 'GET' ? decisionsResponse : method === 'PUT' ? decisionResponse : undefined;
  if (who === 'refused') return { expect: [401], schema };
  if (known === false) return { expect: [404], schema };
  // A member may or may not belong to the finding's teams — the odd token's teams too: POST /targets
  // of the campaign gives targets odd teams, "\ud800" among them, stored as the U+FFFD its token's
  // "\ud800" also becomes. A catalog finding other than the first is not certain to exist.
  const unsure = who !== 'admin' || known === undefined ? [404] : [];
  if (method === 'GET') return { expect: [200, ...unsure], schema };
  if (method === 'DELETE') return { expect: [204, 404], schema };
  return { expect: [...bodyStatuses(type, body, [200, 422]), ...unsure], schema };
}

/**
 * Webhook URLs: loopback only (nothing the campaign subscribes may be dialled elsewhere) — mostly
 * the campaign's receiver, so that deliveries succeed at once instead of retrying for the rest of
 * the run — or not http(s) at all.
 */
const webhookUrl = (ctx: FuzzContext) =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .tuple(
          fc.oneof(
            { weight: 8, arbitrary: fc.constant(ctx.hookBase ?? 'http://127.0.0.1:1') },
            { weight: 1, arbitrary: fc.constantFrom('https://[::1]:1', 'http://localhost:1') },
          ),
          fc.oneof(text(), fc.constant('')),
        )
        .map(([base, path]) => `${base}/${path}`),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'ftp://127.0.0.1/x',
        'javascript:alert(1)',
        'http://user:pass@127.0.0.1:1/',
        'http:///x',
        `http://127.0.0.1:1/${'p'.repeat(2040)}`,
        'http://\ud800/',
        '127.0.0.1:1',
        '',
      ),
    },
    { weight: 1, arbitrary: oddString },
  );

/** A POST /webhooks body (SPEC §9.1). */
const webhookBody = (ctx: FuzzContext) => {
  const list = (item: fc.Arbitrary<string>) =>
    fc.oneof(
      { weight: 6, arbitrary: fc.array(item, { maxLength: 4 }).map((xs) => `[${xs.join(',')}]`) },
      { weight: 1, arbitrary: anyJson },
    );
  const team = fc.oneof(fc.constantFrom(...ctx.teams).map(str), fc.uuid().map(str), text().map(str));
  const event = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...EVENT_TYPES).map(str) }, { weight: 1, arbitrary: text().map(str) });
  const record = fc
    .record({
      url: field(webhookUrl(ctx).map(str), 10),
      secret: field(text().map(str), 4),
      teams: field(list(team), 3),
      events: field(list(event), 3),
      extra: fc.array(fc.tuple(fc.constantFrom('url', 'secret', 'teams', 'events', 'id'), anyJson), { maxLength: 2 }),
      shuffle: fc.boolean(),
    })
    .map(({ extra, shuffle, ...fields }) => {
      const entries = definedEntries(fields);
      return objectText(shuffle ? [...extra, ...entries] : [...entries, ...extra]);
    });
  return fc.oneof({ weight: 12, arbitrary: record }, { weight: 1, arbitrary: anyJson }, { weight: 1, arbitrary: brokenBody });
};

/** Webhook subscriptions: made (admins only), listed, deleted. */
export function webhookRequests(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      bearer: bearer(ctx),
      method: fc.oneof({ weight: 8, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('GET', 'DELETE') }),
      body: webhookBody(ctx),
      type: contentType,
      id: fc.oneof(
        fc.uuid(),
        oddString.map((s) => `zz${percentEncode(s).slice(0, 2000)}`),
      ),
    })
    .map((r) => {
      const headers: Record<string, string | string[]> = {};
      if (r.bearer.header !== undefined) headers.Authorization = r.bearer.header;
      if (r.method === 'POST' && r.type.value !== undefined) headers['Content-Type'] = r.type.value;
      const route = r.method === 'DELETE' ? '/api/v1/webhooks/{id}' : '/api/v1/webhooks';
      const path = r.method === 'DELETE' ? `/api/v1/webhooks/${r.id}` : route;
      let expect: readonly number[];
      if (r.bearer.kind === 'refused') expect = [401];
      else if (r.bearer.kind !== 'admin') expect = [403];
      else if (r.method === 'POST') expect = bodyStatuses(r.type, r.body, [201, 422]);
      else expect = r.method === 'GET' ? [200] : [404];
      const body = r.method === 'POST' ? r.body : undefined;
      return new FuzzRequest('metrics', `${r.method} ${route}`, r.method, path, headers, body, expect, undefined);
    });
}

/**
 * After the campaign: on each finding, the decisions its concurrent writes made took effect one
 * after another — at most one is unrevoked, and it is the newest (nothing expires or lapses during
 * a campaign: expiries are days ahead and the workers are stopped). Returns what is wrong.
 */
export async function decisionProblems(metricsUrl: string, adminToken: string, findings: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const id of findings) {
    const res = await fetch(`${metricsUrl}/api/v1/findings/${id}/decisions`, { headers: { Authorization: `Bearer ${adminToken}` } });
    if (res.status === 404) continue;
    const { decisions } = decisionsResponse.parse(await res.json());
    const open = decisions.filter((d) => d.revoked_at === null);
    if (open.length > 1 || (open.length === 1 && open[0] !== decisions[0]))
      problems.push(
        `finding ${id}: ${open.length} of ${decisions.length} decisions unrevoked (${open.map((d) => d.created_at).join(', ')})`,
      );
  }
  return problems;
}

/** A loopback receiver answering every delivery 204 at once: the campaign's webhooks' target (`FuzzContext.hookBase`). */
export async function startHookReceiver(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close };
}
