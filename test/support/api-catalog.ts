import { findingId, issueId, sourceId, targetId } from '../../src/domain/ids.js';
import { report, type VulnSpec } from './reports.js';

/**
 * A small known report history for the database API list tests: four targets in two teams (one
 * target in both, one in none), five issues across every severity, one fix, and a target scanned
 * repeatedly (two scans at the same second). Everything expected is derived by hand below.
 *
 * now = 2024-03-01T00:00:00Z. Family vulcan/vulcan-web/"{}" throughout.
 */

export const NOW = '2024-03-01T00:00:00Z';
export const TEAM_A = 'a3c5e7f9-1b2d-4f6a-8c0e-2b4d6f8a0c1e';
export const TEAM_B = 'b7d9e1f3-5a7c-4e9b-8d1f-3a5c7e9b1d3f';

export const I1: VulnSpec = {
  summary: 'SQL Injection',
  description: 'Unsanitised input reaches SQL.',
  score: 9.5,
  labels: ['web', 'owasp'],
};
export const I2: VulnSpec = { summary: 'Cross-Site Scripting', description: 'Reflected XSS.', score: 6.1, labels: ['web'] };
export const I3: VulnSpec = { summary: 'Open Port', description: 'An open TCP port.', score: 0, labels: ['network'] };
export const I4: VulnSpec = { summary: 'Weak Cipher', description: 'A weak TLS cipher suite.', score: 3.2 };
export const I5: VulnSpec = {
  summary: 'Outdated Software',
  description: 'A server version with known flaws.',
  score: 7.5,
  labels: ['patch'],
};

export const T1 = 'alpha.example.com'; // TEAM_A
export const T2 = 'beta.example.com'; // TEAM_A and TEAM_B
export const T3 = 'gamma.example.org'; // TEAM_B
export const T4 = 'delta.example.net'; // no team

const COMPONENT = 'vulcan-web';
const scan = (check: string, target: string, at: string, vulns: VulnSpec[]) =>
  report({ check_id: check, checktype_name: COMPONENT, target, end_time: at, vulnerabilities: vulns });

export const reports = [
  scan('c1', T1, '2024-02-01 10:00:00', [I1, I2]),
  scan('c2', T1, '2024-02-10 10:00:00', [I2]), // fixes T1/I1 after 216 h
  scan('c3', T2, '2024-02-05 00:00:00', [I1, I3, I4]),
  scan('c4', T3, '2024-02-15 12:00:00', [I5, I2]),
  scan('c5', T4, '2024-02-20 00:00:00', [I3]),
  scan('c6', T4, '2024-02-21 00:00:00', [I3]),
  scan('c7a', T4, '2024-02-23 00:00:00', [I3]),
  scan('c7b', T4, '2024-02-23 00:00:00', [I3]),
];

export const teamsOf = { [T1]: [TEAM_A], [T2]: [TEAM_A, TEAM_B], [T3]: [TEAM_B] } as const;

export const tid = (identifier: string) => targetId(identifier);
export const iid = (v: VulnSpec) => issueId(v.summary, v.description ?? '');
export const fid = (target: string, v: VulnSpec) => findingId(targetId(target), iid(v), target);
export const sid = (check: string) => sourceId('vulcan', COMPONENT, check, '{}');

/** Every finding: [target, issue, score, status]. */
export const findings = [
  { id: fid(T1, I1), target: T1, issue: I1, score: 9.5, status: 'FIXED' },
  { id: fid(T1, I2), target: T1, issue: I2, score: 6.1, status: 'OPEN' },
  { id: fid(T2, I1), target: T2, issue: I1, score: 9.5, status: 'OPEN' },
  { id: fid(T2, I3), target: T2, issue: I3, score: 0, status: 'OPEN' },
  { id: fid(T2, I4), target: T2, issue: I4, score: 3.2, status: 'OPEN' },
  { id: fid(T3, I5), target: T3, issue: I5, score: 7.5, status: 'OPEN' },
  { id: fid(T3, I2), target: T3, issue: I2, score: 6.1, status: 'OPEN' },
  { id: fid(T4, I3), target: T4, issue: I3, score: 0, status: 'OPEN' },
] as const;

/** Ids of the findings matching `keep`, in ascending id (byte) order. */
export const idsWhere = (keep: (f: (typeof findings)[number]) => boolean) =>
  findings
    .filter(keep)
    .map((f) => f.id)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** Ingests the catalog and associates the teams. */
export async function loadCatalog(svc: {
  postJson: (path: string, body: unknown) => Promise<Response>;
  settle: () => Promise<void>;
}): Promise<void> {
  for (const r of reports) {
    const res = await svc.postJson('/checks', r);
    if (res.status !== 202) throw new Error(`POST /checks: ${res.status} ${await res.text()}`);
  }
  await svc.settle();
  for (const [identifier, teams] of Object.entries(teamsOf)) {
    const res = await svc.postJson('/targets', { identifier, teams });
    if (res.status !== 201) throw new Error(`POST /targets: ${res.status} ${await res.text()}`);
  }
}
