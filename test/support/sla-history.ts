import { findingId, issueId, targetId } from '../../src/domain/ids.js';
import { report, type VulnSpec } from './reports.js';

/**
 * A small history for the SLA tests (SPEC §12), one finding per target, family vulcan/vulcan-sla/{}.
 * Default policy: critical 7 d, high 30 d, medium 90 d, low 180 d, informational none.
 * NOW = 2024-06-01T00:00:00Z.
 *
 *   target  teams   issue (score)  periods                                   deadline(s)
 *   s1      X       C (9.5)        05-20 → open                              05-27
 *   s2      X       C              05-30 → open                              06-06
 *   s3      X       H (8)          01-01 → 01-31 (30 d exactly), 03-01 → 04-15 (45 d)   01-31, 03-31
 *   s4      X, Y    M (5)          02-01 → open                              05-01
 *   s5      Y       L (2)          03-01 → 03-10                             08-28
 *   s6      Y       I (0)          01-01 → 01-05                             none
 *   s7      Y       I              04-01 → open                              none
 *   s8      -       H              05-02 → open                              06-01 00:00 = NOW
 */

export const SLA_NOW = '2024-06-01T00:00:00Z';
export const TEAM_X = '0a6e5a4c-5e0f-4d4c-9a59-0d1f5b2f7a01';
export const TEAM_Y = '0a6e5a4c-5e0f-4d4c-9a59-0d1f5b2f7a02';

export const C: VulnSpec = { summary: 'SLA critical', score: 9.5, labels: ['crit'] };
export const H: VulnSpec = { summary: 'SLA high', score: 8 };
export const M: VulnSpec = { summary: 'SLA medium', score: 5 };
export const L: VulnSpec = { summary: 'SLA low', score: 2 };
export const I: VulnSpec = { summary: 'SLA informational', score: 0 };

export const SLA_TARGETS: Record<string, string[]> = {
  's1.sla.example.com': [TEAM_X],
  's2.sla.example.com': [TEAM_X],
  's3.sla.example.com': [TEAM_X],
  's4.sla.example.com': [TEAM_X, TEAM_Y],
  's5.sla.example.com': [TEAM_Y],
  's6.sla.example.com': [TEAM_Y],
  's7.sla.example.com': [TEAM_Y],
  's8.sla.example.com': [],
};

let n = 0;
/** A scan of target s<k> on a day of 2024 finding `vulns`. */
export const scan = (target: string, day: string, vulns: VulnSpec[]) =>
  report({
    check_id: `sla-${++n}`,
    checktype_name: 'vulcan-sla',
    target: `${target}.sla.example.com`,
    end_time: `2024-${day} 00:00:00`,
    vulnerabilities: vulns,
  });

export const SLA_REPORTS = [
  scan('s1', '05-20', [C]),
  scan('s1', '05-25', [C]),
  scan('s2', '05-30', [C]),
  scan('s3', '01-01', [H]),
  scan('s3', '01-31', []),
  scan('s3', '03-01', [H]),
  scan('s3', '04-15', []),
  scan('s4', '02-01', [M]),
  scan('s5', '03-01', [L]),
  scan('s5', '03-10', []),
  scan('s6', '01-01', [I]),
  scan('s6', '01-05', []),
  scan('s7', '04-01', [I]),
  scan('s8', '05-02', [H]),
];

/** The finding id on target s<k> of the table above. */
export function slaFinding(target: string, v: VulnSpec): string {
  const identifier = `${target}.sla.example.com`;
  return findingId(targetId(identifier), issueId(v.summary, ''), identifier);
}
