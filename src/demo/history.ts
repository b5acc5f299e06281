import { prng } from './prng.js';
import { uuidv5 } from '../domain/ids.js';
import { formatInstant } from '../domain/time.js';
import { CHECK_TYPES, TEAMS, type AssetKind, type CheckType } from './catalog.js';

/**
 * A generated, realistic report history for the demo and the benchmarks: targets of several
 * kinds owned by teams, scanned weekly by the check types that fit them, with issues appearing,
 * getting fixed and reappearing over months. Deterministic for a given seed and end date, so
 * running the demo twice on the same day adds nothing (every report is a duplicate).
 */

export interface DemoTarget {
  identifier: string;
  kind: AssetKind;
  teams: string[];
}

export interface HistoryOptions {
  targets: number;
  days: number;
  /** Epoch second the history ends at (the last scans happen before it). */
  end: number;
  seed?: number;
  /** Days between two scans of a target by one check type. */
  intervalDays?: number;
}

/** Team ids are UUIDv5 of the team names, so a person can find them again. */
export const teamId = (name: string) => uuidv5(JSON.stringify(['demo-team', name]));

const KINDS: AssetKind[] = ['hostname', 'hostname', 'web', 'web', 'ip', 'repository', 'image', 'aws'];

function identifierOf(kind: AssetKind, i: number, team: string): string {
  switch (kind) {
    case 'hostname':
      return `host-${i}.${team}.example.com`;
    case 'web':
      return `https://app-${i}.${team}.example.com`;
    case 'ip':
      return `10.${(i >> 8) & 255}.${i & 255}.${(i * 7) % 250}`;
    case 'repository':
      return `github.com/example/${team}-service-${i}`;
    case 'image':
      return `registry.example.com/${team}/service-${i}:latest`;
    case 'aws':
      return `arn:aws:iam::${String(100000000000 + i * 7919).slice(0, 12)}:root`;
  }
}

export function demoTargets(count: number, seed = 1): DemoTarget[] {
  const rnd = prng(seed);
  return Array.from({ length: count }, (_, i) => {
    const kind = KINDS[Math.floor(rnd() * KINDS.length)]!;
    const owner = TEAMS[Math.floor(rnd() * TEAMS.length)]!;
    const teams = [teamId(owner)];
    if (rnd() < 0.15) teams.push(teamId(TEAMS[(TEAMS.indexOf(owner) + 1) % TEAMS.length]!));
    return { identifier: identifierOf(kind, i, owner), kind, teams };
  });
}

function vulnerability(check: CheckType, issueIndex: number, resource: string | undefined, rnd: () => number) {
  const i = check.issues[issueIndex]!;
  return {
    id: uuidv5(String(rnd())),
    summary: i.summary,
    description: i.description,
    score: i.score,
    cwe_id: i.cwe,
    labels: i.labels,
    recommendations: i.recommendations,
    references: [`https://cwe.mitre.org/data/definitions/${i.cwe}.html`],
    details: resource ? `Found at ${resource}` : `${i.summary} confirmed by ${check.name}`,
    ...(resource ? { affected_resource: resource, affected_resource_string: resource } : {}),
    resources: [{ Name: 'Evidence', Header: ['Check', 'Result'], Rows: [{ Check: check.name, Result: 'vulnerable' }] }],
  };
}

/** Yields reports in time order (scan by scan). */
export function* demoHistory(opts: HistoryOptions): Generator<Record<string, unknown>> {
  const rnd = prng(opts.seed ?? 7);
  const interval = (opts.intervalDays ?? 7) * 86_400;
  const start = opts.end - opts.days * 86_400;
  const targets = demoTargets(opts.targets, opts.seed ?? 1);

  interface Track {
    target: DemoTarget;
    check: CheckType;
    next: number;
    present: Set<string>; // "issueIndex/resource"
  }
  const tracks: Track[] = [];
  for (const target of targets) {
    for (const check of CHECK_TYPES) {
      if (!check.kinds.includes(target.kind)) continue;
      tracks.push({ target, check, next: start + Math.floor(rnd() * interval), present: new Set() });
    }
  }
  tracks.sort((a, b) => a.next - b.next);

  let scan = 0;
  for (let t = start; t < opts.end; t += 3600) {
    for (const track of tracks) {
      if (track.next > t || track.next >= opts.end) continue;
      const { check, target } = track;
      check.issues.forEach((issue, k) => {
        for (const resource of issue.perResource ?? [undefined]) {
          const key = `${k}/${resource ?? ''}`;
          if (track.present.has(key)) {
            if (rnd() < issue.fix) track.present.delete(key);
          } else if (rnd() < issue.appear) {
            track.present.add(key);
          }
        }
      });
      const vulnerabilities = [...track.present].map((key) => {
        const [k, resource] = key.split('/') as [string, string];
        return vulnerability(check, Number(k), resource === '' ? undefined : resource, rnd);
      });
      const time = formatInstant(track.next).replace('T', ' ').replace('Z', '');
      scan += 1;
      yield {
        check_id: uuidv5(JSON.stringify(['demo-check', opts.end, target.identifier, check.name, check.options, track.next])),
        checktype_name: check.name,
        checktype_version: '1.0.0',
        status: 'FINISHED',
        target: target.identifier,
        options: check.options,
        tag: `sdrn:demo:scan:${scan}`,
        start_time: time,
        end_time: time,
        vulnerabilities,
      };
      // Weekly, with some jitter; occasionally an extra rescan a day later.
      track.next += rnd() < 0.1 ? 86_400 : interval + Math.floor((rnd() - 0.5) * 7200);
    }
  }
}
