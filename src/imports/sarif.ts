import { at, fail, integer, type JsonObject, list, object, requiredObject, text, texts } from './read.js';
import {
  type ConvertContext,
  type Conversion,
  documentCheckId,
  fallbackTime,
  firstPresent,
  noTarget,
  present,
  type ReportDraft,
  Unconvertible,
  type VulcanVulnerability,
} from './report.js';

/**
 * SARIF 2.1.0 (CodeQL, Semgrep, Trivy `--format sarif`, …) to Vulcan reports, SPEC §13: one
 * report per run, one vulnerability per result. Only the fields the mapping reads are read (and
 * type-checked); everything else in the document is ignored.
 */

/** What the mapping reads of a reporting descriptor (a rule), with what its tags give worked out once. */
interface Rule {
  id: string | undefined;
  summary: string | undefined;
  help: string | undefined;
  helpUri: string | undefined;
  level: string | undefined;
  severity: unknown;
  cwe: number | null;
  labels: string[];
}

function readRule(value: unknown, path: string): Rule {
  const rule = requiredObject(value, path);
  const properties = object(rule.properties, at(path, 'properties'));
  const tags = texts(properties?.tags, at(path, 'properties.tags'));
  const cwe = tags.map((t) => CWE_TAG.exec(t)).find((m) => m !== null);
  return {
    id: text(rule.id, at(path, 'id')),
    summary: firstPresent(
      text(object(rule.shortDescription, at(path, 'shortDescription'))?.text, at(path, 'shortDescription.text')),
      text(rule.name, at(path, 'name')),
    ),
    help: present(text(object(rule.help, at(path, 'help'))?.text, at(path, 'help.text'))),
    helpUri: present(text(rule.helpUri, at(path, 'helpUri'))),
    level: text(object(rule.defaultConfiguration, at(path, 'defaultConfiguration'))?.level, at(path, 'defaultConfiguration.level')),
    severity: properties?.['security-severity'],
    cwe: cwe ? Number(cwe[1]) : null,
    labels: tags.filter((t) => !CWE_TAG.test(t)),
  };
}

/** One tool component's rules, indexed once so that finding a result's rule costs the same whatever their number. */
interface RuleSet {
  list: Rule[];
  /** The first rule of each id (as a search of the list in order would find it). */
  byId: Map<string, Rule>;
}

/** A component's rules, read one by one (yielding after each: a pause point for the caller). */
function* readRules(value: unknown, path: string): Generator<undefined, RuleSet> {
  const items = list(value, path);
  const set: RuleSet = { list: [], byId: new Map() };
  for (let i = 0; i < items.length; i++) {
    const rule = readRule(items[i], at(path, i));
    set.list.push(rule);
    if (rule.id !== undefined && !set.byId.has(rule.id)) set.byId.set(rule.id, rule);
    yield;
  }
  return set;
}

/** The rules of a run: the driver's, and each extension's (a result's rule.toolComponent.index names one). */
interface Rules {
  driver: RuleSet;
  extensions: RuleSet[];
}

/** SARIF `level` when no `security-severity` gives a score. */
const LEVEL_SCORES: Record<string, number> = { error: 7.0, warning: 4.0, note: 1.0, none: 0 };
/** SARIF's default level when neither the result nor its rule's configuration gives one (SARIF §3.27.10). */
const DEFAULT_LEVEL = 'warning';
/** Result kinds that say the code is fine: not findings. */
const NOT_A_PROBLEM: ReadonlySet<string> = new Set(['pass', 'notApplicable']);
const CWE_TAG = /^external\/cwe\/cwe-(\d+)$/i;

/** A `security-severity` (a string such as "7.5", or a number) as a score in [0, 10], or undefined. */
function securitySeverity(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
  return Number.isFinite(n) && n >= 0 && n <= 10 ? n : undefined;
}

/** The rule a result refers to: by index (in the driver, or in the extension its toolComponent names), else by id. */
function ruleOf(rules: Rules, result: JsonObject, path: string): Rule | undefined {
  const ref = object(result.rule, at(path, 'rule'));
  const component = integer(object(ref?.toolComponent, at(path, 'rule.toolComponent'))?.index, at(path, 'rule.toolComponent.index'));
  const candidates = component === undefined ? rules.driver : rules.extensions[component];
  const index = integer(ref?.index, at(path, 'rule.index')) ?? integer(result.ruleIndex, at(path, 'ruleIndex'));
  if (index !== undefined && candidates?.list[index]) return candidates.list[index];
  const id = text(ref?.id, at(path, 'rule.id')) ?? text(result.ruleId, at(path, 'ruleId'));
  return id === undefined ? undefined : candidates?.byId.get(id);
}

function affectedResource(result: JsonObject, path: string): string | undefined {
  const first = list(result.locations, at(path, 'locations'))[0];
  const location = object(object(first, at(path, 'locations[0]'))?.physicalLocation, at(path, 'locations[0].physicalLocation'));
  const where = at(path, 'locations[0].physicalLocation');
  const uri = present(text(object(location?.artifactLocation, at(where, 'artifactLocation'))?.uri, at(where, 'artifactLocation.uri')));
  if (uri === undefined) return undefined;
  const line = integer(object(location?.region, at(where, 'region'))?.startLine, at(where, 'region.startLine'));
  return line === undefined ? uri : `${uri}:${line}`;
}

/** The first value of a string → string object (fingerprints). */
function firstValue(value: unknown, path: string): string | undefined {
  const record = object(value, path);
  if (record === undefined) return undefined;
  for (const key in record) return present(text(record[key], at(path, key)));
  return undefined;
}

/** One result as a vulnerability (SPEC §13), reading its rule's fields where the result has none. */
function sarifVulnerability(result: JsonObject, rule: Rule | undefined, path: string): VulcanVulnerability {
  const level = firstPresent(text(result.level, at(path, 'level')), rule?.level) ?? DEFAULT_LEVEL;
  const resultSeverity = object(result.properties, at(path, 'properties'))?.['security-severity'];
  const score = securitySeverity(rule?.severity) ?? securitySeverity(resultSeverity) ?? LEVEL_SCORES[level] ?? 0;
  return {
    summary: firstPresent(rule?.summary, text(result.ruleId, at(path, 'ruleId')), rule?.id) ?? '',
    score,
    cwe_id: rule?.cwe ?? null,
    affected_resource: affectedResource(result, path) ?? null,
    details: present(text(object(result.message, at(path, 'message'))?.text, at(path, 'message.text'))) ?? null,
    recommendations: rule?.help === undefined ? [] : [rule.help],
    references: rule?.helpUri === undefined ? [] : [rule.helpUri],
    labels: rule?.labels ?? [],
    fingerprint:
      firstValue(result.partialFingerprints, at(path, 'partialFingerprints')) ??
      firstValue(result.fingerprints, at(path, 'fingerprints')) ??
      null,
  };
}

/** A run's vulnerabilities, one per result, its rules read first (SPEC §13). */
function* vulnerabilitiesOf(run: JsonObject, tool: JsonObject, path: string): Generator<VulcanVulnerability | undefined> {
  const driver = requiredObject(tool.driver, at(path, 'tool.driver'));
  const extensions = list(tool.extensions, at(path, 'tool.extensions'));
  const rules: Rules = { driver: yield* readRules(driver.rules, at(path, 'tool.driver.rules')), extensions: [] };
  for (let i = 0; i < extensions.length; i++) {
    const where = at(path, `tool.extensions[${i}]`);
    rules.extensions.push(yield* readRules(object(extensions[i], where)?.rules, at(where, 'rules')));
  }
  const results = list(run.results, at(path, 'results'));
  for (let i = 0; i < results.length; i++) {
    const where = at(at(path, 'results'), i);
    const result = requiredObject(results[i], where);
    if (NOT_A_PROBLEM.has(text(result.kind, at(where, 'kind')) ?? '')) yield undefined;
    else yield sarifVulnerability(result, ruleOf(rules, result, where), where);
  }
}

function runDraft(value: unknown, index: number, runs: number, ctx: ConvertContext): ReportDraft {
  const path = `runs[${index}]`;
  const run = requiredObject(value, path);
  const tool = requiredObject(run.tool, at(path, 'tool'));
  const driver = requiredObject(tool.driver, at(path, 'tool.driver'));
  const name = present(text(driver.name, at(path, 'tool.driver.name'))) ?? fail(at(path, 'tool.driver.name'), 'a non-empty string');
  const repository = object(
    list(run.versionControlProvenance, at(path, 'versionControlProvenance'))[0],
    at(path, 'versionControlProvenance[0]'),
  );
  const target = firstPresent(ctx.target, text(repository?.repositoryUri, at(path, 'versionControlProvenance[0].repositoryUri')));
  if (target === undefined) throw new Unconvertible(noTarget(`${path} (no versionControlProvenance[0].repositoryUri)`));
  const automation = object(run.automationDetails, at(path, 'automationDetails'));
  const invocation = object(list(run.invocations, at(path, 'invocations'))[0], at(path, 'invocations[0]'));
  const fields: ReportDraft['fields'] = {
    status: 'FINISHED',
    check_id: present(text(automation?.guid, at(path, 'automationDetails.guid'))) ?? documentCheckId(ctx.sha256, index),
    checktype_name: name,
    checktype_version:
      firstPresent(
        text(driver.semanticVersion, at(path, 'tool.driver.semanticVersion')),
        text(driver.version, at(path, 'tool.driver.version')),
      ) ?? null,
    target,
    options: present(text(automation?.id, at(path, 'automationDetails.id'))) ?? null,
    end_time:
      firstPresent(
        text(invocation?.endTimeUtc, at(path, 'invocations[0].endTimeUtc')),
        text(invocation?.startTimeUtc, at(path, 'invocations[0].startTimeUtc')),
      ) ?? fallbackTime(ctx),
  };
  return { part: runs > 1 ? path : undefined, fields, vulnerabilities: vulnerabilitiesOf(run, tool, path) };
}

/** SPEC §13: a SARIF 2.1.0 document as one Vulcan report per run, read run by run. */
export function* sarifReports(document: unknown, ctx: ConvertContext): Conversion {
  const doc = object(document, 'document') ?? fail('document', 'an object');
  const runs = Array.isArray(doc.runs) ? doc.runs : fail('runs', 'an array');
  if (runs.length === 0) throw new Unconvertible('the SARIF document holds no runs');
  for (let i = 0; i < runs.length; i++) yield runDraft(runs[i], i, runs.length, ctx);
}
