import { z } from 'zod';
import { describeIssues } from '../queue/contract.js';
import {
  type ConvertContext,
  type Conversion,
  documentCheckId,
  fallbackTime,
  firstPresent,
  noTarget,
  present,
  type VulcanReport,
  type VulcanVulnerability,
} from './report.js';

/**
 * SARIF 2.1.0 (CodeQL, Semgrep, Trivy `--format sarif`, …) to Vulcan reports, SPEC §13: one
 * report per run, one vulnerability per result. Only the fields the mapping reads are described
 * (and type-checked); everything else in the document is ignored.
 */

const str = z.string().nullish();
const message = z.object({ text: str }).nullish();
const properties = z.object({ tags: z.array(z.string()).nullish(), 'security-severity': z.unknown().optional() }).nullish();

const ruleSchema = z.object({
  id: str,
  name: str,
  shortDescription: message,
  help: message,
  helpUri: str,
  defaultConfiguration: z.object({ level: str }).nullish(),
  properties,
});
type Rule = z.infer<typeof ruleSchema>;

const toolComponent = z.object({ name: str, semanticVersion: str, version: str, rules: z.array(ruleSchema).nullish() });

const resultSchema = z.object({
  ruleId: str,
  ruleIndex: z.number().int().nullish(),
  rule: z
    .object({ id: str, index: z.number().int().nullish(), toolComponent: z.object({ index: z.number().int().nullish() }).nullish() })
    .nullish(),
  kind: str,
  level: str,
  message,
  locations: z
    .array(
      z.object({
        physicalLocation: z
          .object({
            artifactLocation: z.object({ uri: str }).nullish(),
            region: z.object({ startLine: z.number().int().nullish() }).nullish(),
          })
          .nullish(),
      }),
    )
    .nullish(),
  partialFingerprints: z.record(z.string(), z.string()).nullish(),
  fingerprints: z.record(z.string(), z.string()).nullish(),
  properties,
});
type Result = z.infer<typeof resultSchema>;

const runSchema = z.object({
  tool: z.object({ driver: toolComponent.extend({ name: z.string().min(1) }), extensions: z.array(toolComponent).nullish() }),
  automationDetails: z.object({ id: str, guid: str }).nullish(),
  versionControlProvenance: z.array(z.object({ repositoryUri: str })).nullish(),
  invocations: z.array(z.object({ startTimeUtc: str, endTimeUtc: str })).nullish(),
  results: z.array(resultSchema).nullish(),
});
type Run = z.infer<typeof runSchema>;

const sarifSchema = z.object({ runs: z.array(runSchema) }, { error: 'must be a JSON object' });

/** SARIF `level` when no `security-severity` gives a score. */
const LEVEL_SCORES: Record<string, number> = { error: 7.0, warning: 4.0, note: 1.0, none: 0 };
/** SARIF's default level when neither the result nor its rule's configuration gives one (SARIF §3.27.10). */
const DEFAULT_LEVEL = 'warning';
/** Result kinds that say the code is fine: not findings. */
const NOT_A_PROBLEM = new Set(['pass', 'notApplicable']);
const CWE_TAG = /^external\/cwe\/cwe-(\d+)$/i;

/** A `security-severity` (a string such as "7.5", or a number) as a score in [0, 10], or undefined. */
function securitySeverity(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
  return Number.isFinite(n) && n >= 0 && n <= 10 ? n : undefined;
}

/** The rule a result refers to: by index (in the driver, or in the extension its toolComponent names), else by id. */
function ruleOf(run: Run, result: Result): Rule | undefined {
  const component = result.rule?.toolComponent?.index;
  const rules = (component == null ? run.tool.driver.rules : run.tool.extensions?.[component]?.rules) ?? [];
  const index = result.rule?.index ?? result.ruleIndex;
  if (index != null && rules[index]) return rules[index];
  const id = result.rule?.id ?? result.ruleId;
  return id == null ? undefined : rules.find((r) => r.id === id);
}

function affectedResource(result: Result): string | undefined {
  const location = result.locations?.[0]?.physicalLocation;
  const uri = present(location?.artifactLocation?.uri);
  if (uri === undefined) return undefined;
  const line = location?.region?.startLine;
  return line == null ? uri : `${uri}:${line}`;
}

const firstValue = (record: Record<string, string> | null | undefined) => (record ? present(Object.values(record)[0]) : undefined);

export function sarifVulnerability(result: Result, rule: Rule | undefined): VulcanVulnerability {
  const tags = rule?.properties?.tags ?? [];
  const cwe = tags.map((t) => CWE_TAG.exec(t)).find((m) => m !== null);
  const level = firstPresent(result.level, rule?.defaultConfiguration?.level) ?? DEFAULT_LEVEL;
  const score =
    securitySeverity(rule?.properties?.['security-severity']) ??
    securitySeverity(result.properties?.['security-severity']) ??
    LEVEL_SCORES[level] ??
    0;
  const help = present(rule?.help?.text);
  const helpUri = present(rule?.helpUri);
  return {
    summary: firstPresent(rule?.shortDescription?.text, rule?.name, result.ruleId, result.rule?.id) ?? '',
    score,
    cwe_id: cwe ? Number(cwe[1]) : null,
    affected_resource: affectedResource(result) ?? null,
    details: present(result.message?.text) ?? null,
    recommendations: help === undefined ? [] : [help],
    references: helpUri === undefined ? [] : [helpUri],
    labels: tags.filter((t) => !CWE_TAG.test(t)),
    fingerprint: firstValue(result.partialFingerprints) ?? firstValue(result.fingerprints) ?? null,
  };
}

function runReport(run: Run, index: number, ctx: ConvertContext): VulcanReport | string {
  const target = firstPresent(ctx.target, run.versionControlProvenance?.[0]?.repositoryUri);
  if (target === undefined) return noTarget(`runs[${index}] (no versionControlProvenance[0].repositoryUri)`);
  const invocation = run.invocations?.[0];
  const driver = run.tool.driver;
  return {
    status: 'FINISHED',
    check_id: firstPresent(run.automationDetails?.guid) ?? documentCheckId(ctx.sha256, index),
    checktype_name: driver.name,
    checktype_version: firstPresent(driver.semanticVersion, driver.version) ?? null,
    target,
    options: present(run.automationDetails?.id) ?? null,
    end_time: firstPresent(invocation?.endTimeUtc, invocation?.startTimeUtc) ?? fallbackTime(ctx),
    vulnerabilities: (run.results ?? []).filter((r) => !NOT_A_PROBLEM.has(r.kind ?? '')).map((r) => sarifVulnerability(r, ruleOf(run, r))),
  };
}

/** SPEC §13: a SARIF 2.1.0 document as one Vulcan report per run. */
export function sarifReports(document: unknown, ctx: ConvertContext): Conversion {
  const parsed = sarifSchema.safeParse(document);
  if (!parsed.success) return { reason: `not a SARIF 2.1.0 document: ${describeIssues(parsed.error)}` };
  if (parsed.data.runs.length === 0) return { reason: 'the SARIF document holds no runs' };
  const reports: VulcanReport[] = [];
  for (const [i, run] of parsed.data.runs.entries()) {
    const report = runReport(run, i, ctx);
    if (typeof report === 'string') return { reason: report };
    reports.push(report);
  }
  return { reports };
}
