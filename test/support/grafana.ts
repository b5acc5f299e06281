import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What Grafana and the grafana-clickhouse-datasource plugin do to a panel's SQL before ClickHouse
 * sees it, for a fixed time range, interval and team selection: the frontend's $__conditionalAll,
 * then the template variables, then the backend macros of the plugin (pkg/macros/macros.go:
 * fromTime, toTime, fromTime_ms, toTime_ms, timeFilter, timeFilter_ms, dateFilter, dateTimeFilter
 * (alias dt), timeInterval, timeInterval_ms, interval_s), with literal times as the plugin writes
 * them. Anything left starting with `$` is an error: a macro the plugin does not have, or a
 * variable the dashboard does not define.
 */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

type Obj = Record<string, any>;

export interface Dashboard {
  file: string;
  json: Obj;
}

export function loadDashboards(): Dashboard[] {
  return fs
    .readdirSync(path.join(ROOT, 'dashboards'))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ file: `dashboards/${f}`, json: JSON.parse(fs.readFileSync(path.join(ROOT, 'dashboards', f), 'utf8')) as Obj }));
}

/** Panels, including those nested in collapsed rows. */
export function panelsOf(dashboard: Obj): Obj[] {
  return (dashboard.panels ?? []).flatMap((p: Obj) => [p, ...(p.panels ?? [])]);
}

/** The data source a query uses: its own, else its panel's. */
export const datasourceOf = (panel: Obj, target: Obj): Obj | undefined => target.datasource ?? panel.datasource;

/** A multi-value variable: the selected values, or every value (Grafana's "All"). */
export type Selection = { all: true; values: string[] } | { all: false; values: string[] };

export interface Expansion {
  /** Epoch seconds of the time range (Grafana's from and to). */
  from: number;
  to: number;
  /** Grafana's interval for the panel, in seconds. */
  intervalS: number;
  vars: Record<string, Selection>;
}

/** The arguments of the macro call whose "(" is at `open` (top-level commas only), and its end. */
function macroArgs(sql: string, open: number): { args: string[]; end: number } {
  let depth = 0;
  let start = open + 1;
  const args: string[] = [];
  for (let i = open; i < sql.length; i++) {
    const c = sql[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) {
      args.push(sql.slice(start, i).trim());
      return { args, end: i + 1 };
    } else if (c === ',' && depth === 1) {
      args.push(sql.slice(start, i).trim());
      start = i + 1;
    }
  }
  throw new Error(`unbalanced macro call in ${sql.slice(open, open + 80)}`);
}

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export function expandQuery(sql: string, e: Expansion): string {
  // Frontend: $__conditionalAll(condition, $var) → condition, or 1=1 when the variable selects All.
  const conditional = '$__conditionalAll(';
  for (let at = sql.lastIndexOf(conditional); at !== -1; at = sql.lastIndexOf(conditional)) {
    const { args, end } = macroArgs(sql, at + conditional.length - 1);
    if (args.length !== 2) throw new Error(`$__conditionalAll takes 2 arguments: ${sql.slice(at, end)}`);
    const name = /^\$\{?(\w+)\}?$/.exec(args[1]!)?.[1];
    const selection = name === undefined ? undefined : e.vars[name];
    if (!selection) throw new Error(`$__conditionalAll refers to an unknown variable: ${args[1]}`);
    sql = sql.slice(0, at) + (selection.all ? '1=1' : args[0]!) + sql.slice(end);
  }
  // Frontend: template variables. A multi-value variable in this plugin's SQL renders as quoted,
  // comma-separated values, which is also what the explicit :singlequote format gives.
  sql = sql.replace(
    /\$\{(\w+)(?::(\w+))?\}|\$(?!__)(\w+)/g,
    (whole, a: string | undefined, format: string | undefined, b: string | undefined) => {
      const name = (a ?? b)!;
      const selection = e.vars[name];
      if (!selection) throw new Error(`unknown template variable ${whole}`);
      if (format !== undefined && format !== 'singlequote') throw new Error(`variable format not handled here: ${whole}`);
      if (selection.values.length === 0) throw new Error(`variable ${name} has no value`);
      return selection.values.map(quote).join(',');
    },
  );
  // Backend: the plugin's macros.
  const dt = (s: number) => `toDateTime(${s})`;
  const dt64 = (s: number) => `fromUnixTimestamp64Milli(${s * 1000})`;
  const day = (s: number) => `toDate('${new Date(s * 1000).toISOString().slice(0, 10)}')`;
  const interval = Math.max(1, Math.floor(e.intervalS));
  const withArgs = (name: string, arity: number, f: (args: string[]) => string) => {
    const m = `$__${name}(`;
    for (let at = sql.indexOf(m); at !== -1; at = sql.indexOf(m)) {
      const { args, end } = macroArgs(sql, at + m.length - 1);
      if (args.length !== arity) throw new Error(`$__${name} takes ${arity} argument(s): ${sql.slice(at, end)}`);
      sql = sql.slice(0, at) + f(args) + sql.slice(end);
    }
  };
  withArgs('timeFilter_ms', 1, ([c]) => `${c} >= ${dt64(e.from)} AND ${c} <= ${dt64(e.to)}`);
  withArgs('timeFilter', 1, ([c]) => `${c} >= ${dt(e.from)} AND ${c} <= ${dt(e.to)}`);
  withArgs(
    'dateTimeFilter',
    2,
    ([d, t]) => `(${d} >= ${day(e.from)} AND ${d} <= ${day(e.to)}) AND (${t} >= ${dt(e.from)} AND ${t} <= ${dt(e.to)})`,
  );
  withArgs('dt', 2, ([d, t]) => `(${d} >= ${day(e.from)} AND ${d} <= ${day(e.to)}) AND (${t} >= ${dt(e.from)} AND ${t} <= ${dt(e.to)})`);
  withArgs('dateFilter', 1, ([c]) => `${c} >= ${day(e.from)} AND ${c} <= ${day(e.to)}`);
  withArgs('timeInterval_ms', 1, ([c]) => `toStartOfInterval(toDateTime64(${c}, 3), INTERVAL ${interval * 1000} millisecond)`);
  withArgs('timeInterval', 1, ([c]) => `toStartOfInterval(toDateTime(${c}), INTERVAL ${interval} second)`);
  sql = sql
    .replace(/\$__fromTime_ms\b/g, dt64(e.from))
    .replace(/\$__toTime_ms\b/g, dt64(e.to))
    .replace(/\$__fromTime\b/g, dt(e.from))
    .replace(/\$__toTime\b/g, dt(e.to))
    .replace(/\$__interval_s\b/g, String(interval));
  if (sql.includes('$')) throw new Error(`unexpanded macro or variable in:\n${sql}`);
  return sql;
}

/** The metric selectors of a PromQL expression (names followed by `{` or `[`, or bare names known to be metrics). */
export function promMetrics(expr: string): string[] {
  const names = new Set<string>();
  for (const m of expr.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?=[{[])/g)) names.add(m[1]!);
  for (const m of expr.matchAll(/\bvulndb_[a-zA-Z0-9_:]*/g)) names.add(m[0]);
  return [...names];
}

/** Label matchers of a PromQL expression: [label, operator, value]. */
export function promMatchers(expr: string): [string, string, string][] {
  const out: [string, string, string][] = [];
  for (const block of expr.matchAll(/\{([^}]*)\}/g)) {
    for (const m of block[1]!.matchAll(/(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)) out.push([m[1]!, m[2]!, m[3]!]);
  }
  return out;
}

/** Labels named in `by (...)` / `without (...)` clauses. */
export function promGroupings(expr: string): string[] {
  return [...expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) =>
    m[1]!
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
}
