/** Builders of Vulcan check reports for tests. */

export interface VulnSpec {
  summary: string;
  description?: string;
  score?: number;
  affected_resource?: string;
  details?: string;
  labels?: string[];
  [key: string]: unknown;
}

export interface ReportSpec {
  check_id: string;
  target?: string;
  checktype_name?: string;
  options?: string;
  end_time: string;
  vulnerabilities?: VulnSpec[];
  [key: string]: unknown;
}

export function report(spec: ReportSpec): Record<string, unknown> {
  return {
    checktype_name: 'vulcan-tls',
    checktype_version: '1.0.0',
    status: 'FINISHED',
    target: 'www.example.com',
    options: '{}',
    tag: 'sdrn:test',
    start_time: spec.end_time,
    vulnerabilities: [],
    ...spec,
  };
}

/** The vulnerability V of the SPEC §3.8 worked example. */
export const V: VulnSpec = {
  summary: 'TLS Version 1.0 Protocol Detection',
  description: 'The remote service accepts TLS 1.0 connections.',
  score: 6.5,
  details: 'TLSv1.0 accepted on port 443',
  labels: ['TLS', 'issue'],
};

/** r1–r4 of SPEC §3.8 (family vulcan/vulcan-tls/"{}", target www.example.com). */
export const worked = {
  r1: report({ check_id: 'r1-0000', end_time: '2024-01-01 10:00:00', vulnerabilities: [V] }),
  r2: report({ check_id: 'r2-0000', end_time: '2024-01-02 10:00:00', vulnerabilities: [V] }),
  r3: report({ check_id: 'r3-0000', end_time: '2024-01-03 10:00:00', vulnerabilities: [] }),
  r4: report({ check_id: 'r4-0000', end_time: '2024-01-05 10:00:00', vulnerabilities: [V] }),
};

export function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((x, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [x, ...rest]));
}
