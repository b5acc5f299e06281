/**
 * npm run bench:imports [-- --reports 10000 --rounds 1]
 *
 * SARIF imports (SPEC §13) against Vulcan reports of the same size, through the path of
 * `vulndb import --direct`: one synthetic history (bench/lib/synthetic.ts: 10 vulnerabilities per
 * report, 25 scans per target) written once as Vulcan reports and once as SARIF documents (one run
 * per document, one result per vulnerability, the same targets and times). Each variant runs in a
 * process of its own into a fresh embedded store, its texts generated before the clock starts:
 *   vulcan  each report's JSON text parsed and handed to the ingest batcher;
 *   sarif   each document's SHA-256 taken, the text parsed, converted and validated
 *           (importDocument), and the validated report handed to the same batcher.
 * The clock stops when every report is committed. Also measured: the conversion alone (documents/s),
 * and the conversion time of one document of 10k/20k/40k/80k results (`--variant scaling`: that alone).
 * Results: bench/results/imports.json (and bench/results/runs/) and the console.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { directBatchesInFlight } from '../src/cli/import.js';
import { loadConfig } from '../src/config.js';
import { formatInstant, nowSeconds } from '../src/domain/time.js';
import { ReportBatcher } from '../src/ingest/batcher.js';
import { documentSha256, importDocument } from '../src/imports/formats.js';
import { createLogger } from '../src/log.js';
import { openStore } from '../src/storage/gateway.js';
import { migrate } from '../src/storage/migrate.js';
import { checkReport } from '../src/queue/contract.js';
import { writeResults } from './lib/results.js';
import { syntheticReports, VULNS_PER_REPORT } from './lib/synthetic.js';
import { ownedStore } from './lib/owned-store.js';
import { optionOf } from './lib/args.js';

const args = process.argv.slice(2);
const arg = optionOf(args);
const REPORTS = Number(arg('reports', '10000'));
const ROUNDS = Number(arg('rounds', '1'));
const SCANS = 25;
/** The bound of POST /imports with the default MAX_REPORT_BYTES (SPEC §5.6). */
const LIMITS = { maxBytes: 10 * 1024 * 1024 };
const TARGETS = Math.ceil(REPORTS / SCANS);
const VARIANT = arg('variant', '');

type Report = ReturnType<typeof syntheticReports> extends Generator<infer R> ? R : never;
const iso = (stamp: unknown) => `${String(stamp).replace(' ', 'T')}Z`;

/** The SARIF document a scanner would write for the same scan: a rule and a result per vulnerability. */
function sarifOf(report: Report): string {
  const vulnerabilities = report.vulnerabilities as Record<string, any>[];
  return JSON.stringify({
    version: '2.1.0',
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    runs: [
      {
        tool: {
          driver: {
            name: report.checktype_name,
            semanticVersion: report.checktype_version,
            rules: vulnerabilities.map((v, i) => ({
              id: `rule-${i}`,
              name: `Rule${i}`,
              shortDescription: { text: v.summary },
              fullDescription: { text: v.description },
              help: { text: v.recommendations[0] },
              helpUri: v.references[0],
              properties: { 'security-severity': String(v.score), tags: [...v.labels, `external/cwe/cwe-${v.cwe_id}`] },
            })),
          },
        },
        automationDetails: { id: report.options },
        versionControlProvenance: [{ repositoryUri: report.target }],
        invocations: [{ executionSuccessful: true, startTimeUtc: iso(report.start_time), endTimeUtc: iso(report.end_time) }],
        results: vulnerabilities.map((v, i) => ({
          ruleId: `rule-${i}`,
          ruleIndex: i,
          level: 'warning',
          message: { text: v.details },
          locations: [{ physicalLocation: { artifactLocation: { uri: `src/module-${i}.js` }, region: { startLine: 10 + i } } }],
          partialFingerprints: { primaryLocationLineHash: `${v.id}:1` },
        })),
      },
    ],
  });
}

/** One variant in this process, into a fresh store: prints its figures as one JSON line. */
async function runVariant(variant: 'vulcan' | 'sarif') {
  const dataDir = path.join(os.tmpdir(), `vulndb-bench-imports-${variant}-${process.pid}`);
  fs.rmSync(dataDir, { recursive: true, force: true });
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  const log = createLogger('warn');
  const store = await openStore(config.store);
  await migrate(store, log);
  const concurrency = directBatchesInFlight(config.ingest.concurrency);
  const batcher = new ReportBatcher({
    store,
    ...(await ownedStore(store, log)),
    batchSize: config.ingest.batchSize,
    waitMs: config.ingest.batchWaitMs,
    concurrency,
    maxEventAgeDays: 0,
    log,
  });
  const texts: string[] = [];
  for (const r of syntheticReports({ targets: TARGETS, scans: SCANS, churn: 0.01 }))
    texts.push(variant === 'sarif' ? sarifOf(r) : JSON.stringify(r));
  const bytes = texts.reduce((n, t) => n + t.length, 0);

  const now = formatInstant(nowSeconds());
  /** What `vulndb import --direct` hands the batcher for one input (src/cli/import.ts, importDirect). */
  const submit = (text: string) => {
    if (variant === 'vulcan') return batcher.submit({ data: JSON.parse(text), attemptsStarted: 1 });
    return convert(text).then((report) => batcher.submitPrepared(batcher.prepareChecked(report), { attemptsStarted: 1 }));
  };
  const convert = async (text: string) => {
    const imported = await importDocument('sarif', JSON.parse(text), { sha256: documentSha256(Buffer.from(text)), now }, LIMITS);
    if (!('reports' in imported)) throw new Error('reason' in imported ? imported.reason : imported.tooLarge);
    return imported.reports[0]!;
  };

  // Parsing and validation alone (and conversion, for SARIF) on a sample, which also warms both variants up alike.
  const sample = texts.slice(0, Math.min(2000, texts.length));
  const convertStarted = performance.now();
  for (const t of sample) await (variant === 'sarif' ? convert : (text: string) => checkReport(JSON.parse(text)))(t);
  const convertSeconds = (performance.now() - convertStarted) / 1000;

  const maxInFlight = concurrency * config.ingest.batchSize;
  const inFlight = new Set<Promise<unknown>>();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (const text of texts) {
    const p = submit(text).finally(() => inFlight.delete(p));
    inFlight.add(p);
    if (inFlight.size >= maxInFlight) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const [counts] = await store.query<{ sources: number; events: number }>(
    'SELECT (SELECT count() FROM sources) AS sources, (SELECT count() FROM finding_events) AS events',
  );
  await store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  const line = {
    variant,
    reports: texts.length,
    stored: counts,
    inputMiB: +(bytes / 1024 / 1024).toFixed(1),
    seconds: +seconds.toFixed(1),
    reportsPerSecond: Math.round(texts.length / seconds),
    // This process's CPU (the engine's threads included) per report: steadier than the rate on a busy machine.
    cpuMsPerReport: +((cpu.user + cpu.system) / 1000 / texts.length).toFixed(3),
    parseCheckPerSecond: Math.round(sample.length / convertSeconds),
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

if (VARIANT === 'vulcan' || VARIANT === 'sarif') {
  await runVariant(VARIANT);
  process.exit(0);
}

/**
 * Conversion time of one SARIF document of n rules and n results whose rule ids match none (the
 * worst case of a search of the rules, issue 31), for n = 10k…80k: importDocument without the
 * bound, best of three, wall and this process's CPU. Linear: 8x from 10k to 80k.
 */
async function conversionScaling() {
  const out: Record<string, { wallMs: number; cpuMs: number; inputMiB: number }> = {};
  for (const n of [10_000, 20_000, 40_000, 80_000]) {
    const rules = Array.from({ length: n }, (_, i) => ({ id: `r${i}` }));
    const results = Array.from({ length: n }, (_, i) => ({ ruleId: `x${i}` }));
    const text = JSON.stringify({
      version: '2.1.0',
      runs: [{ tool: { driver: { name: 'scanner', rules } }, versionControlProvenance: [{ repositoryUri: 'app' }], results }],
    });
    let best = { wallMs: Infinity, cpuMs: Infinity, inputMiB: +(text.length / 1024 / 1024).toFixed(1) };
    for (let round = 0; round < 3; round++) {
      const document = JSON.parse(text);
      const cpu = process.cpuUsage();
      const started = performance.now();
      await importDocument(
        'sarif',
        document,
        { sha256: documentSha256(Buffer.from(text)), now: formatInstant(nowSeconds()) },
        {
          maxBytes: Infinity,
        },
      );
      const used = process.cpuUsage(cpu);
      const wallMs = +(performance.now() - started).toFixed(1);
      if (wallMs < best.wallMs) best = { ...best, wallMs, cpuMs: +((used.user + used.system) / 1000).toFixed(1) };
    }
    out[n] = best;
    console.log(`  conversion of ${n} results: ${best.wallMs} ms (${best.cpuMs} ms CPU, ${best.inputMiB} MiB)`);
  }
  const ratio = (key: 'wallMs' | 'cpuMs') => +(out[80_000]![key] / out[10_000]![key]).toFixed(2);
  return { resultsToMs: out, ratio80kTo10k: { wall: ratio('wallMs'), cpu: ratio('cpuMs') } };
}

if (VARIANT === 'scaling') {
  console.log(JSON.stringify(await conversionScaling(), null, 2));
  process.exit(0);
}

console.log(`imports benchmark: ${REPORTS} reports × ${VULNS_PER_REPORT} vulnerabilities, ${TARGETS} targets, ${ROUNDS} round(s)`);
const runs: Record<string, any>[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternate the order from round to round: the machine's state drifts over a run.
  for (const variant of round % 2 === 0 ? ['vulcan', 'sarif'] : ['sarif', 'vulcan']) {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--max-semi-space-size=64', '--import', 'tsx', 'bench/imports.ts', '--variant', variant, '--reports', String(REPORTS)],
      { maxBuffer: 1024 * 1024, env: process.env },
    );
    const line = JSON.parse(stdout.trim().split('\n').pop()!);
    console.log(
      `  ${variant}: ${line.reportsPerSecond} reports/s, ${line.cpuMsPerReport} ms CPU per report (${line.seconds} s, ${line.inputMiB} MiB of input)`,
    );
    runs.push(line);
  }
}
const scaling = await conversionScaling();
const best = (variant: string) => Math.max(...runs.filter((r) => r.variant === variant).map((r) => r.reportsPerSecond));
const ratio = best('sarif') / best('vulcan');
const cpuOf = (variant: string) => Math.min(...runs.filter((r) => r.variant === variant).map((r) => r.cpuMsPerReport));
const result = {
  date: new Date().toISOString(),
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
  parameters: { reports: REPORTS, targets: TARGETS, scans: SCANS, vulnerabilitiesPerReport: VULNS_PER_REPORT, rounds: ROUNDS },
  runs,
  reportsPerSecond: { vulcan: best('vulcan'), sarif: best('sarif') },
  sarifOverVulcan: +ratio.toFixed(3),
  cpuMsPerReport: { vulcan: cpuOf('vulcan'), sarif: cpuOf('sarif') },
  conversionScaling: scaling,
  target: 'SARIF within 20% of Vulcan reports (sarifOverVulcan ≥ 0.8); conversion linear (ratio80kTo10k near 8)',
};
const written = writeResults('imports', result);
console.log(JSON.stringify(result, null, 2));
console.log(`written to ${written.latest} and ${written.kept}`);
