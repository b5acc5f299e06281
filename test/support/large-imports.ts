/**
 * Scanner documents that small bodies can make expensive (issue 31): many rules and results, a long
 * help text or Trivy `Target` copied into every vulnerability, many runs. Shared by the import tests.
 */

const run = (extra: Record<string, unknown>, rules: unknown[] = [{ id: 'r' }]) => ({
  tool: { driver: { name: 'scanner', rules } },
  versionControlProvenance: [{ repositoryUri: 'https://git.example.com/app' }],
  invocations: [{ endTimeUtc: '2024-06-01T10:00:00Z' }],
  ...extra,
});

/**
 * One run of `n` rules and `n` results; each result names rule `r<i>` (`match`) or an id no rule
 * has. The document: 80,000 of each in 2.9 MB, with an `endTimeUtc` that is not a time.
 */
export function manyRulesSarif(n: number, opts: { match: boolean; endTimeUtc?: string }): string {
  const rules = Array.from({ length: n }, (_, i) => ({ id: `r${i}` }));
  const results = Array.from({ length: n }, (_, i) => ({ ruleId: `${opts.match ? 'r' : 'x'}${i}` }));
  const invocations = [{ endTimeUtc: opts.endTimeUtc ?? '2024-06-01T10:00:00Z' }];
  return JSON.stringify({ version: '2.1.0', runs: [run({ results, invocations }, rules)] });
}

/** One rule with `helpBytes` of help text and `results` results of it: the help is copied into each vulnerability. */
export function longHelpSarif(helpBytes: number, results: number): string {
  const rules = [{ id: 'r', shortDescription: { text: 'long help' }, help: { text: 'h'.repeat(helpBytes) } }];
  const list = Array.from({ length: results }, (_, i) => ({ ruleId: 'r', locations: [loc(i)] }));
  return JSON.stringify({ version: '2.1.0', runs: [run({ results: list }, rules)] });
}

const loc = (i: number) => ({ physicalLocation: { artifactLocation: { uri: `src/f${i}.js` } } });

/** `runs` runs of one result each. */
export function manyRunsSarif(runs: number): string {
  const one = (i: number) => run({ results: [{ ruleId: 'r', locations: [loc(i)] }], automationDetails: { id: `run-${i}` } });
  return JSON.stringify({ version: '2.1.0', runs: Array.from({ length: runs }, (_, i) => one(i)) });
}

/** A Trivy document whose one result has a `Target` of `targetBytes` and `vulnerabilities` vulnerabilities. */
export function longTargetTrivy(targetBytes: number, vulnerabilities: number): string {
  const list = Array.from({ length: vulnerabilities }, (_, i) => ({
    VulnerabilityID: `CVE-2024-${i}`,
    PkgName: `p${i}`,
    Severity: 'HIGH',
  }));
  return JSON.stringify({
    SchemaVersion: 2,
    ArtifactName: 'registry.example.com/app:1',
    CreatedAt: '2024-06-01T10:00:00Z',
    Results: [{ Target: 't'.repeat(targetBytes), Class: 'os-pkgs', Vulnerabilities: list }],
  });
}
